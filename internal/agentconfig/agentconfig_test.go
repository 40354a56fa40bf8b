package agentconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// agentFiles says where each agent's files go, relative to the project (or, for user scope, the
// home directory).
type agentFiles struct {
	agent                 string
	mcpProject, mcpUser   string
	denyProject, denyUser string // a second file for --disable-builtin-tools; "" if the same file
	toml                  bool
}

var allAgents = []agentFiles{
	{agent: "claude", mcpProject: ".mcp.json", mcpUser: ".claude.json", denyProject: ".claude/settings.json", denyUser: ".claude/settings.json"},
	{agent: "gemini", mcpProject: ".gemini/settings.json", mcpUser: ".gemini/settings.json"},
	{agent: "codex", mcpProject: ".codex/config.toml", mcpUser: ".codex/config.toml", toml: true},
	{agent: "cursor", mcpProject: ".cursor/mcp.json", mcpUser: ".cursor/mcp.json", denyProject: ".cursor/cli.json", denyUser: ".cursor/cli-config.json"},
}

func testDirs(t *testing.T) (home, work string) {
	t.Helper()
	root := t.TempDir()
	home, work = filepath.Join(root, "home"), filepath.Join(root, "project")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return home, work
}

func mustPlan(t *testing.T, o Options) []Change {
	t.Helper()
	changes, err := Plan(o)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return changes
}

func mustApply(t *testing.T, changes []Change) {
	t.Helper()
	if err := Apply(changes); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decodeFile decodes a written config file as the client would.
func decodeFile(t *testing.T, path string, isTOML bool) map[string]any {
	t.Helper()
	var m map[string]any
	b := []byte(readFile(t, path))
	var err error
	if isTOML {
		err = toml.Unmarshal(b, &m)
	} else {
		err = json.Unmarshal(stripJSONComments(b), &m)
	}
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", path, err, b)
	}
	return m
}

func dig(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	v, ok := lookupPlain(m, path)
	if !ok {
		t.Fatalf("no %s in %v", strings.Join(path, "."), m)
	}
	return v
}

func TestPlanFreshFiles(t *testing.T) {
	for _, a := range allAgents {
		for _, user := range []bool{false, true} {
			for _, disable := range []bool{false, true} {
				name := a.agent + map[bool]string{false: "/project", true: "/user"}[user] + map[bool]string{false: "", true: "/disable-builtin-tools"}[disable]
				t.Run(name, func(t *testing.T) {
					home, work := testDirs(t)
					o := Options{Agent: a.agent, Instance: "dev", Workdir: work, HomeDir: home, User: user, DisableBuiltinTools: disable}
					base, mcpRel, denyRel := work, a.mcpProject, a.denyProject
					if user {
						base, mcpRel, denyRel = home, a.mcpUser, a.denyUser
					}
					changes := mustPlan(t, o)
					wantFiles := 1
					if disable && denyRel != "" {
						wantFiles = 2
					}
					if len(changes) != wantFiles {
						t.Fatalf("%d changes, want %d", len(changes), wantFiles)
					}
					mcpPath := filepath.Join(base, mcpRel)
					if changes[0].Path != mcpPath {
						t.Errorf("path %s, want %s", changes[0].Path, mcpPath)
					}
					for _, c := range changes {
						if !c.Creates() || !c.Changed() || c.Summary == "" || len(c.Notes) == 0 {
							t.Errorf("change %+v", c)
						}
						if _, err := os.Stat(c.Path); err == nil {
							t.Errorf("Plan wrote %s", c.Path)
						}
						if !strings.HasPrefix(c.Diff(), "--- /dev/null\n+++ "+c.Path+"\n@@ -0,0 +1,") {
							t.Errorf("diff:\n%s", c.Diff())
						}
					}
					mustApply(t, changes)

					m := decodeFile(t, mcpPath, a.toml)
					serverTable := "mcpServers"
					if a.toml {
						serverTable = "mcp_servers"
					}
					if got := dig(t, m, serverTable, "lima", "command"); got != "limactl" {
						t.Errorf("command = %v", got)
					}
					if got := dig(t, m, serverTable, "lima", "args"); !reflect.DeepEqual(got, []any{"mcp", "serve", "dev"}) {
						t.Errorf("args = %v", got)
					}
					if a.agent == "claude" {
						if got := dig(t, m, serverTable, "lima", "type"); got != "stdio" {
							t.Errorf("type = %v", got)
						}
					}
					if disable {
						switch a.agent {
						case "claude":
							deny := dig(t, decodeFile(t, filepath.Join(base, denyRel), false), "permissions", "deny").([]any)
							for _, tool := range []string{"Bash", "Read", "Edit", "Write", "NotebookEdit", "Glob", "Grep", "LSP", "EnterWorktree"} {
								if slices.Contains(deny, any("MultiEdit")) {
									t.Errorf("deny %v names MultiEdit, a tool current Claude Code lacks (claude doctor flags it)", deny)
								}
								if !slices.Contains(deny, any(tool)) {
									t.Errorf("deny %v lacks %s", deny, tool)
								}
							}
						case "gemini":
							exclude := dig(t, m, "tools", "exclude").([]any)
							if !slices.Contains(exclude, any("ShellTool")) || slices.Contains(exclude, any("read_file")) {
								t.Errorf("exclude = %v", exclude)
							}
						case "codex":
							for _, f := range []string{"shell_tool", "view_image"} {
								if got := dig(t, m, "features", f); got != false {
									t.Errorf("%s = %v", f, got)
								}
							}
						case "cursor":
							deny := dig(t, decodeFile(t, filepath.Join(base, denyRel), false), "permissions", "deny")
							if !reflect.DeepEqual(deny, []any{"Shell(*)", "Read(**)", "Write(**)", "Read(/**)", "Write(/**)"}) {
								t.Errorf("deny = %v", deny)
							}
						}
					}
					wantMode := os.FileMode(0o644)
					if user {
						wantMode = 0o600
					}
					if info, err := os.Stat(mcpPath); err != nil || info.Mode().Perm() != wantMode {
						t.Errorf("mode %v, want %v (%v)", info.Mode().Perm(), wantMode, err)
					}

					// A second run changes nothing.
					for _, c := range mustPlan(t, o) {
						if c.Changed() || string(c.After) != string(c.Before) || c.Diff() != "" {
							t.Errorf("second run changes %s:\n%s", c.Path, c.Diff())
						}
					}
				})
			}
		}
	}
}

// TestPlanKeepsExistingSettings checks the exact text written into files that already hold other
// servers and settings: the new entries are spliced in, the rest stays byte for byte.
func TestPlanKeepsExistingSettings(t *testing.T) {
	tests := []struct {
		agent        string
		file, before string
		after        string
		deny         string // the second file (claude, cursor): before and after
		denyBefore   string
		denyAfter    string
	}{
		{
			agent: "claude",
			file:  ".mcp.json",
			before: `{
  "mcpServers": {
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/"
    },
    "lima": {
      "command": "/opt/limactl",
      "args": ["mcp", "serve", "old"],
      "env": {"LIMA_HOME": "/x"}
    }
  },
  "other": [1, 2.50, {"deep": null}]
}
`,
			after: `{
  "mcpServers": {
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/"
    },
    "lima": {
      "command": "limactl",
      "args": ["mcp", "serve", "default"],
      "env": {"LIMA_HOME": "/x"},
      "type": "stdio"
    }
  },
  "other": [1, 2.50, {"deep": null}]
}
`,
			deny: ".claude/settings.json",
			denyBefore: `{
  "model": "opus",
  "permissions": {
    "allow": ["Bash(git status)"],
    "deny": [
      "Bash",
      "Read(./.env)"
    ]
  }
}`,
			denyAfter: `{
  "model": "opus",
  "permissions": {
    "allow": ["Bash(git status)"],
    "deny": [
      "Bash",
      "Read(./.env)",
      "Monitor",
      "PowerShell",
      "Read",
      "Write",
      "Edit",
      "NotebookEdit",
      "Glob",
      "Grep",
      "LSP",
      "EnterWorktree"
    ]
  }
}`,
		},
		{
			agent: "gemini",
			file:  ".gemini/settings.json",
			before: `// Gemini settings
{
  "general": { "vimMode": true },
  "tools": {
    "sandbox": "docker",
    "exclude": ["web_fetch", "ShellTool"] // no web
  },
  "mcpServers": {
    "docs": { "command": "npx", "args": ["-y", "docs-mcp"], "trust": false }
  }
}
`,
			after: `// Gemini settings
{
  "general": { "vimMode": true },
  "tools": {
    "sandbox": "docker",
    "exclude": ["web_fetch", "ShellTool", "ReadFileTool", "ReadManyFilesTool", "WriteFileTool", "EditTool", "GlobTool", "GrepTool", "RipGrepTool", "LSTool"] // no web
  },
  "mcpServers": {
    "docs": { "command": "npx", "args": ["-y", "docs-mcp"], "trust": false },
    "lima": {
      "command": "limactl",
      "args": [
        "mcp",
        "serve",
        "default"
      ]
    }
  }
}
`,
		},
		{
			agent: "codex",
			file:  ".codex/config.toml",
			before: `model = "gpt-5" # default model
approval_policy = "on-request"

[features]
web_search = true

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]
`,
			after: `model = "gpt-5" # default model
approval_policy = "on-request"

[features]
web_search = true
shell_tool = false
view_image = false

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[mcp_servers.lima]
command = "limactl"
args = ["mcp", "serve", "default"]
`,
		},
		{
			agent:  "cursor",
			file:   ".cursor/mcp.json",
			before: `{"mcpServers": {"docs": {"command": "npx", "args": ["-y", "docs-mcp"], "env": {"K": "v"}}}}`,
			after:  `{"mcpServers": {"docs": {"command": "npx", "args": ["-y", "docs-mcp"], "env": {"K": "v"}}, "lima": {"command": "limactl", "args": ["mcp", "serve", "default"]}}}`,
			deny:   ".cursor/cli.json",
			denyBefore: `{
	"permissions": {
		"allow": ["Shell(ls)"],
		"deny": ["Shell(rm)", "Read(**)"]
	}
}
`,
			denyAfter: `{
	"permissions": {
		"allow": ["Shell(ls)"],
		"deny": ["Shell(rm)", "Read(**)", "Shell(*)", "Write(**)", "Read(/**)", "Write(/**)"]
	}
}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			home, work := testDirs(t)
			path := filepath.Join(work, tt.file)
			writeFile(t, path, tt.before)
			var denyPath string
			if tt.deny != "" {
				denyPath = filepath.Join(work, tt.deny)
				writeFile(t, denyPath, tt.denyBefore)
			}
			o := Options{Agent: tt.agent, Workdir: work, HomeDir: home, DisableBuiltinTools: true}
			changes := mustPlan(t, o)
			if string(changes[0].Before) != tt.before {
				t.Errorf("Before is not the file's content")
			}
			mustApply(t, changes)
			if got := readFile(t, path); got != tt.after {
				t.Errorf("%s:\n%s\nwant:\n%s", tt.file, got, tt.after)
			}
			if denyPath != "" {
				if got := readFile(t, denyPath); got != tt.denyAfter {
					t.Errorf("%s:\n%s\nwant:\n%s", tt.deny, got, tt.denyAfter)
				}
			}
			for _, c := range mustPlan(t, o) {
				if c.Changed() {
					t.Errorf("second run changes %s:\n%s", c.Path, c.Diff())
				}
			}
		})
	}
}

func TestPlanRefusesUnparseableFiles(t *testing.T) {
	tests := []struct {
		agent, file, content string
		disable              bool
	}{
		{"claude", ".mcp.json", `{"mcpServers": {"a": {},}}`, false},
		{"claude", ".mcp.json", "{\"mcpServers\": {} // comment\n}", false},
		{"claude", ".mcp.json", `["not", "an", "object"]`, false},
		{"claude", ".claude/settings.json", `{"permissions": `, true},
		{"claude", ".claude/settings.json", `{"permissions": {"deny": "Bash"}}`, true},
		{"gemini", ".gemini/settings.json", `{"mcpServers": {/* unterminated }`, false},
		{"gemini", ".gemini/settings.json", `{"mcpServers": []}`, false},
		{"codex", ".codex/config.toml", "[mcp_servers.lima\ncommand = \"x\"", false},
		{"codex", ".codex/config.toml", "[mcp_servers]\nlima = { command = \"x\" }\n", false},
		{"cursor", ".cursor/mcp.json", `{"mcpServers": {"lima": "limactl"}}`, false},
		{"cursor", ".cursor/cli.json", `permissions: {}`, true},
		{"cursor", ".cursor/mcp.json", `{"mcpServers": {"lima": {"url": "http://localhost:1/mcp"}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.agent+"/"+tt.content, func(t *testing.T) {
			home, work := testDirs(t)
			path := filepath.Join(work, tt.file)
			writeFile(t, path, tt.content)
			_, err := Plan(Options{Agent: tt.agent, Workdir: work, HomeDir: home, DisableBuiltinTools: tt.disable})
			if err == nil || !strings.Contains(err.Error(), "refusing to change "+path) {
				t.Fatalf("err = %v", err)
			}
			if got := readFile(t, path); got != tt.content {
				t.Errorf("the file changed: %s", got)
			}
			entries, _ := os.ReadDir(work)
			for _, e := range entries {
				if e.Name() != strings.Split(tt.file, "/")[0] {
					t.Errorf("unexpected %s", e.Name())
				}
			}
		})
	}
}

func TestPlanUserScopeLeavesProjectAlone(t *testing.T) {
	for _, a := range allAgents {
		t.Run(a.agent, func(t *testing.T) {
			home, work := testDirs(t)
			changes := mustPlan(t, Options{Agent: a.agent, Workdir: work, HomeDir: home, User: true, DisableBuiltinTools: true})
			for _, c := range changes {
				if !strings.HasPrefix(c.Path, home+string(filepath.Separator)) {
					t.Errorf("%s is outside the home directory", c.Path)
				}
			}
			mustApply(t, changes)
			if entries, _ := os.ReadDir(work); len(entries) != 0 {
				t.Errorf("the project directory got %v", entries)
			}
		})
	}
}

func TestPlanCustomNameAndCommand(t *testing.T) {
	home, work := testDirs(t)
	o := Options{Agent: "claude", Workdir: work, HomeDir: home, ServerName: "vm", Command: []string{"/usr/local/bin/limactl", "mcp", "serve", "--flag", "box"}}
	changes := mustPlan(t, o)
	mustApply(t, changes)
	m := decodeFile(t, filepath.Join(work, ".mcp.json"), false)
	if got := dig(t, m, "mcpServers", "vm", "args"); !reflect.DeepEqual(got, []any{"mcp", "serve", "--flag", "box"}) {
		t.Errorf("args = %v", got)
	}
	if !strings.Contains(changes[0].Summary, `"vm"`) || !strings.Contains(changes[0].Summary, "/usr/local/bin/limactl mcp serve --flag box") {
		t.Errorf("summary %q", changes[0].Summary)
	}

	// Changing the instance rewrites the args only.
	o2 := Options{Agent: "claude", Workdir: work, HomeDir: home, ServerName: "vm", Instance: "other"}
	c := mustPlan(t, o2)[0]
	if !c.Changed() {
		t.Fatal("no change")
	}
	mustApply(t, []Change{c})
	m = decodeFile(t, filepath.Join(work, ".mcp.json"), false)
	if got := dig(t, m, "mcpServers", "vm"); !reflect.DeepEqual(got, map[string]any{"type": "stdio", "command": "limactl", "args": []any{"mcp", "serve", "other"}}) {
		t.Errorf("entry = %v", got)
	}
}

func TestPlanOptionErrors(t *testing.T) {
	home, work := testDirs(t)
	file := filepath.Join(work, "file")
	writeFile(t, file, "")
	tests := []struct {
		name    string
		o       Options
		wantErr string
	}{
		{"unknown agent", Options{Agent: "vim", Workdir: work}, `unknown agent "vim" (known: claude, codex, cursor, gemini, opencode, vscode, zed)`},
		{"bad instance", Options{Agent: "claude", Workdir: work, Instance: "../x"}, "invalid instance name"},
		{"relative workdir", Options{Agent: "claude", Workdir: "project"}, "not an absolute path"},
		{"no workdir", Options{Agent: "claude"}, "no project directory"},
		{"missing workdir", Options{Agent: "claude", Workdir: filepath.Join(work, "nope")}, "project directory"},
		{"workdir is a file", Options{Agent: "claude", Workdir: file}, "is not a directory"},
		{"relative home", Options{Agent: "claude", User: true, HomeDir: "home"}, "not an absolute path"},
		{"codex server name", Options{Agent: "codex", Workdir: work, ServerName: "my.vm"}, "invalid server name"},
		{"control character in name", Options{Agent: "claude", Workdir: work, ServerName: "a\nb"}, "invalid server name"},
		{"empty command", Options{Agent: "claude", Workdir: work, Command: []string{""}}, "command is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.HomeDir = cmpOr(tt.o.HomeDir, home)
			if _, err := Plan(tt.o); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestPlanNotes(t *testing.T) {
	home, work := testDirs(t)
	notes := func(o Options) string {
		var all []string
		for _, c := range mustPlan(t, o) {
			all = append(all, c.Notes...)
		}
		return strings.Join(all, "\n")
	}
	if n := notes(Options{Agent: "codex", Workdir: work, HomeDir: home, DisableBuiltinTools: true}); !strings.Contains(n, "cannot turn off its built-in apply_patch") || !strings.Contains(n, "only when you trust the project") {
		t.Errorf("codex notes:\n%s", n)
	}
	if n := notes(Options{Agent: "codex", Workdir: work, HomeDir: home, User: true}); strings.Contains(n, "trust") || !strings.Contains(n, "--disable-builtin-tools") {
		t.Errorf("codex user notes:\n%s", n)
	}
	if n := notes(Options{Agent: "cursor", Workdir: work, HomeDir: home, DisableBuiltinTools: true}); !strings.Contains(n, "cannot be turned off from a file") || !strings.Contains(n, "Cursor CLI (cursor-agent) only") {
		t.Errorf("cursor notes:\n%s", n)
	}
	if n := notes(Options{Agent: "gemini", Workdir: work, HomeDir: home, ServerName: "my_vm"}); !strings.Contains(n, "advises against \"_\"") || !strings.Contains(n, "trusts") {
		t.Errorf("gemini notes:\n%s", n)
	}
	writeFile(t, filepath.Join(home, ".gemini/settings.json"), `{"mcp": {"allowed": ["docs"], "excluded": ["lima"]}, "excludeTools": ["x"], "tools": {"core": ["ReadFileTool"]}}`)
	n := notes(Options{Agent: "gemini", HomeDir: home, User: true})
	for _, want := range []string{"mcp.allowed does not list \"lima\"", "mcp.excluded lists \"lima\"", "old flat \"excludeTools\"", "sets tools.core"} {
		if !strings.Contains(n, want) {
			t.Errorf("gemini notes lack %q:\n%s", want, n)
		}
	}
}

func TestAgents(t *testing.T) {
	var names []string
	for _, a := range Agents() {
		if a.Title == "" {
			t.Errorf("%s has no title", a.Name)
		}
		names = append(names, a.Name)
	}
	if !reflect.DeepEqual(names, AgentNames()) || !reflect.DeepEqual(names, []string{"claude", "codex", "cursor", "gemini", "opencode", "vscode", "zed"}) {
		t.Errorf("names %v", names)
	}
}
