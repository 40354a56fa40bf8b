package review

import (
	"path"
	"strings"
)

// The files that set what an agent may do or reach: limactl-mcp's own, and the project files
// in which agents read their MCP servers (with their command lines: serve --network=...),
// permissions, hooks or sandbox settings. An agent may propose changes to them like to any
// file; a review names them, so that a person never widens the agent's own policy through a
// review without seeing it (docs/network.md "Per-project policy"). Names are compared without
// case and without trailing dots and spaces (what a case-insensitive or Windows host takes
// for the same file).
var policyFiles = []struct {
	dir, base string // dir "" at any depth; base "*" any name in dir; base ending "*" a prefix
	what      string
}{
	{"", ".limactl-mcp*", "limactl-mcp configuration"},
	{"", ".mcp.json", "MCP servers (Claude Code)"},
	{".claude", "settings*.json", "Claude Code settings (permissions, hooks, MCP servers)"},
	{"", ".claude.json", "Claude Code configuration"},
	{".gemini", "settings.json", "Gemini CLI settings (MCP servers, sandbox)"},
	{".codex", "config.toml", "Codex configuration (MCP servers, sandbox)"},
	{".vscode", "mcp.json", "VS Code MCP servers"},
	{".vscode", "settings.json", "VS Code settings"},
	{".cursor", "mcp.json", "Cursor MCP servers"},
	{".cursor", "cli*.json", "Cursor CLI permissions"},
	{".zed", "settings.json", "Zed settings (context servers)"},
	{"", "opencode.json", "opencode configuration (MCP servers, permissions)"},
	{"", "opencode.jsonc", "opencode configuration (MCP servers, permissions)"},
}

// SetsPolicy says what agent or policy configuration the file at rel (slash-separated,
// relative to the working directory) is, "" when it is none.
func SetsPolicy(rel string) string {
	parts := strings.Split(rel, "/")
	for i := range parts {
		parts[i] = strings.ToLower(strings.TrimRight(parts[i], ". "))
	}
	base := parts[len(parts)-1]
	dir := ""
	if len(parts) > 1 {
		dir = parts[len(parts)-2]
	}
	for _, f := range policyFiles {
		if f.dir != "" && dir != f.dir {
			continue
		}
		if matchBase(f.base, base) {
			return f.what
		}
	}
	return ""
}

// matchBase matches a lower-case name against a pattern with at most one '*'.
func matchBase(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// SetsPolicy says what agent or policy configuration the item changes ("" none): its path, or
// the name it is renamed from.
func (it *Item) SetsPolicy() string {
	if what := SetsPolicy(it.Path); what != "" {
		return what
	}
	if it.From != nil {
		return SetsPolicy(it.From.Path)
	}
	return ""
}
