package review

import "testing"

func TestSetsPolicy(t *testing.T) {
	for p, want := range map[string]bool{
		".limactl-mcp.json":             true,
		"sub/.limactl-mcp":              true,
		".mcp.json":                     true,
		".MCP.JSON.":                    true,
		"pkg/.mcp.json":                 true,
		".claude/settings.json":         true,
		".claude/settings.local.json":   true,
		".Claude/Settings.Local.JSON":   true,
		".gemini/settings.json":         true,
		".codex/config.toml":            true,
		".vscode/mcp.json":              true,
		".cursor/mcp.json":              true,
		"opencode.json":                 true,
		"main.go":                       false,
		"mcp.json":                      false,
		".claude/commands/x.md":         false,
		"docs/.gemini/settings.json.md": false,
		"config.toml":                   false,
	} {
		if got := SetsPolicy(p) != ""; got != want {
			t.Errorf("SetsPolicy(%q) = %q", p, SetsPolicy(p))
		}
	}
	it := &Item{Path: "notes.txt", From: &Item{Path: ".mcp.json"}}
	if it.SetsPolicy() == "" {
		t.Error("a rename away from .mcp.json is not flagged")
	}
}
