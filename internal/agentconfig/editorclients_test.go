package agentconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The tests of OpenCode, VS Code and Zed: the same checks as agentconfig_test.go makes of the
// other clients (fresh files, idempotence, exact text kept, refusals, links, notes).

// linuxPaths makes user paths those of Linux without $XDG_CONFIG_HOME, whatever runs the test.
func linuxPaths(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("APPDATA", "")
	old := goos
	goos = "linux"
	t.Cleanup(func() { goos = old })
}

var editorAgents = []struct {
	agent               string
	mcpProject, mcpUser string
}{
	{"opencode", "opencode.json", ".config/opencode/opencode.json"},
	{"vscode", ".vscode/mcp.json", ".config/Code/User/mcp.json"},
	{"zed", ".zed/settings.json", ".config/zed/settings.json"},
}

func TestPlanEditorClientsFreshFiles(t *testing.T) {
	linuxPaths(t)
	for _, a := range editorAgents {
		for _, user := range []bool{false, true} {
			for _, disable := range []bool{false, true} {
				name := a.agent + map[bool]string{false: "/project", true: "/user"}[user] + map[bool]string{false: "", true: "/disable-builtin-tools"}[disable]
				t.Run(name, func(t *testing.T) {
					home, work := testDirs(t)
					o := Options{Agent: a.agent, Instance: "dev", Workdir: work, HomeDir: home, User: user, DisableBuiltinTools: disable}
					path := filepath.Join(work, a.mcpProject)
					if user {
						path = filepath.Join(home, a.mcpUser)
					}
					changes := mustPlan(t, o)
					if len(changes) != 1 {
						t.Fatalf("%d changes, want 1", len(changes))
					}
					c := changes[0]
					if c.Path != path || !c.Creates() || !c.Changed() || c.Summary == "" || len(c.Notes) == 0 {
						t.Errorf("change %+v", c)
					}
					if _, err := os.Stat(path); err == nil {
						t.Errorf("Plan wrote %s", path)
					}
					if !strings.HasPrefix(c.Diff(), "--- /dev/null\n+++ "+path+"\n@@ -0,0 +1,") {
						t.Errorf("diff:\n%s", c.Diff())
					}
					mustApply(t, changes)

					m := decodeFile(t, path, false)
					switch a.agent {
					case "opencode":
						want := map[string]any{"type": "local", "command": []any{"limactl", "mcp", "serve", "dev"}, "enabled": true}
						if got := dig(t, m, "mcp", "lima"); !reflect.DeepEqual(got, want) {
							t.Errorf("entry = %v", got)
						}
						perm, _ := lookupPlain(m, []string{"permission"})
						if disable {
							want := map[string]any{"bash": "deny", "read": "deny", "edit": "deny", "glob": "deny", "grep": "deny", "lsp": "deny"}
							if !reflect.DeepEqual(perm, want) {
								t.Errorf("permission = %v", perm)
							}
						} else if perm != nil {
							t.Errorf("permission = %v", perm)
						}
					case "vscode":
						want := map[string]any{"type": "stdio", "command": "limactl", "args": []any{"mcp", "serve", "dev"}}
						if got := dig(t, m, "servers", "lima"); !reflect.DeepEqual(got, want) {
							t.Errorf("entry = %v", got)
						}
					case "zed":
						want := map[string]any{"command": "limactl", "args": []any{"mcp", "serve", "dev"}}
						if got := dig(t, m, "context_servers", "lima"); !reflect.DeepEqual(got, want) {
							t.Errorf("entry = %v", got)
						}
						agent, _ := lookupPlain(m, []string{"agent"})
						if user && disable {
							if got := dig(t, m, "agent", "default_profile"); got != "lima" {
								t.Errorf("default_profile = %v", got)
							}
							profile := dig(t, m, "agent", "profiles", "lima").(map[string]any)
							tools := profile["tools"].(map[string]any)
							for _, tool := range []string{"terminal", "read_file", "edit_file", "grep", "find_path", "list_directory", "delete_path"} {
								if tools[tool] != false {
									t.Errorf("profile tool %s = %v", tool, tools[tool])
								}
							}
							if profile["enable_all_context_servers"] != true || profile["name"] != "Lima VM" {
								t.Errorf("profile = %v", profile)
							}
						} else if agent != nil {
							t.Errorf("agent = %v", agent)
						}
					}
					wantMode := os.FileMode(0o644)
					if user {
						wantMode = 0o600
					}
					if info, err := os.Stat(path); err != nil || info.Mode().Perm() != wantMode {
						t.Errorf("mode %v, want %v (%v)", info.Mode().Perm(), wantMode, err)
					}
					if user {
						if entries, _ := os.ReadDir(work); len(entries) != 0 {
							t.Errorf("the project directory got %v", entries)
						}
					}

					// A second run changes nothing.
					for _, c := range mustPlan(t, o) {
						if c.Changed() || c.Diff() != "" {
							t.Errorf("second run changes %s:\n%s", c.Path, c.Diff())
						}
					}
				})
			}
		}
	}
}

// TestPlanEditorClientsKeepExistingSettings checks the exact text written into files that already
// hold comments, other servers and settings.
func TestPlanEditorClientsKeepExistingSettings(t *testing.T) {
	linuxPaths(t)
	tests := []struct {
		agent         string
		user          bool
		file          string
		before, after string
	}{
		{
			agent: "opencode",
			file:  "opencode.json",
			before: `{
  "$schema": "https://opencode.ai/config.json",
  // my servers
  "mcp": {
    "docs": {"type": "remote", "url": "https://example.com/mcp"},
    "lima": {"type": "local", "command": ["limactl", "mcp", "serve", "old"], "environment": {"A": "b"}}
  },
  "permission": {
    "webfetch": "ask",
    "bash": {"*": "ask", "git *": "allow"}
  }
}
`,
			after: `{
  "$schema": "https://opencode.ai/config.json",
  // my servers
  "mcp": {
    "docs": {"type": "remote", "url": "https://example.com/mcp"},
    "lima": {"type": "local", "command": ["limactl", "mcp", "serve", "default"], "environment": {"A": "b"}, "enabled": true}
  },
  "permission": {
    "webfetch": "ask",
    "bash": "deny",
    "read": "deny",
    "edit": "deny",
    "glob": "deny",
    "grep": "deny",
    "lsp": "deny"
  }
}
`,
		},
		{
			agent: "vscode",
			file:  ".vscode/mcp.json",
			before: `{
	// Copilot's servers
	"inputs": [{"type": "promptString", "id": "token", "password": true}],
	"servers": {
		"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"} /* remote */
	}
}
`,
			after: `{
	// Copilot's servers
	"inputs": [{"type": "promptString", "id": "token", "password": true}],
	"servers": {
		"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}, /* remote */
		"lima": {
			"type": "stdio",
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
			agent: "zed",
			file:  ".zed/settings.json",
			before: `// Folder-specific settings
{
  "tab_size": 4,
  "context_servers": {
    "lima": {
      "command": {"path": "/opt/limactl", "args": ["mcp", "serve", "old"], "env": {}},
      "settings": {}
    }
  }
}
`,
			after: `// Folder-specific settings
{
  "tab_size": 4,
  "context_servers": {
    "lima": {
      "command": "limactl",
      "settings": {},
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
			agent: "zed",
			user:  true,
			file:  ".config/zed/settings.json",
			before: `{
  "theme": "One Dark",
  "agent": {
    "default_profile": "write",
    "profiles": {
      "lima": {"name": "Mine", "tools": {"terminal": true, "fetch": true}}
    }
  }
}
`,
			after: `{
  "theme": "One Dark",
  "agent": {
    "default_profile": "lima",
    "profiles": {
      "lima": {"name": "Lima VM", "tools": {"terminal": false, "fetch": true, "read_file": false, "list_directory": false, "find_path": false, "grep": false, "diagnostics": false, "open": false, "edit_file": false, "save_file": false, "restore_file_from_disk": false, "copy_path": false, "move_path": false, "delete_path": false, "create_directory": false}, "enable_all_context_servers": true}
    }
  },
  "context_servers": {
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
	}
	for _, tt := range tests {
		t.Run(tt.agent+"/"+tt.file, func(t *testing.T) {
			home, work := testDirs(t)
			path := filepath.Join(work, tt.file)
			if tt.user {
				path = filepath.Join(home, tt.file)
			}
			writeFile(t, path, tt.before)
			o := Options{Agent: tt.agent, Workdir: work, HomeDir: home, User: tt.user, DisableBuiltinTools: true}
			changes := mustPlan(t, o)
			if string(changes[0].Before) != tt.before {
				t.Errorf("Before is not the file's content")
			}
			mustApply(t, changes)
			if got := readFile(t, path); got != tt.after {
				t.Errorf("%s:\n%s\nwant:\n%s", tt.file, got, tt.after)
			}
			for _, c := range mustPlan(t, o) {
				if c.Changed() {
					t.Errorf("second run changes %s:\n%s", c.Path, c.Diff())
				}
			}
		})
	}
}

func TestPlanEditorClientsRefuseBadFiles(t *testing.T) {
	linuxPaths(t)
	tests := []struct {
		agent, file, content string
		disable              bool
		want                 string
	}{
		{"opencode", "opencode.json", `{"mcp": {"lima": {"type": "remote", "url": "https://x/mcp"}}}`, false, `reached by "url"`},
		{"opencode", "opencode.json", `{"permission": "ask"}`, true, "permission is a string, not an object"},
		{"opencode", "opencode.json", `{"mcp": {"a": 1,}}`, false, "not valid JSON"},
		{"opencode", "opencode.jsonc", `{"mcp": [] // servers` + "\n}", false, "mcp is an array, not an object"},
		{"vscode", ".vscode/mcp.json", `{"servers": []}`, false, "servers is an array"},
		{"vscode", ".vscode/mcp.json", `{"servers": {"lima": {"type": "sse", "url": "http://localhost:1/sse"}}}`, false, `reached by "url"`},
		{"vscode", ".vscode/mcp.json", `{"servers": {/* open`, false, "not valid JSON"},
		{"zed", ".zed/settings.json", `{"context_servers": {"lima": {"url": "http://localhost:1/mcp"}}}`, false, `reached by "url"`},
		{"zed", ".zed/settings.json", `["not an object"]`, false, "not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.agent+"/"+tt.content, func(t *testing.T) {
			home, work := testDirs(t)
			path := filepath.Join(work, tt.file)
			writeFile(t, path, tt.content)
			_, err := Plan(Options{Agent: tt.agent, Workdir: work, HomeDir: home, DisableBuiltinTools: tt.disable})
			if err == nil || !strings.Contains(err.Error(), "refusing to change "+path) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if got := readFile(t, path); got != tt.content {
				t.Errorf("the file changed: %s", got)
			}
		})
	}
}

func TestPlanEditorClientsRefuseLinksOutOfTheProject(t *testing.T) {
	linuxPaths(t)
	for _, tt := range []struct {
		agent string
		link  func(work, outside string)
	}{
		{"opencode", func(work, outside string) {
			mustSymlink(t, filepath.Join(outside, "opencode.json"), filepath.Join(work, "opencode.json"))
		}},
		{"vscode", func(work, outside string) { mustSymlink(t, outside, filepath.Join(work, ".vscode")) }},
		{"zed", func(work, outside string) {
			mustSymlink(t, filepath.Join(outside, "settings.json"), filepath.Join(work, ".zed", "settings.json"))
		}},
	} {
		t.Run(tt.agent, func(t *testing.T) {
			home, work := testDirs(t)
			outside := filepath.Join(filepath.Dir(work), "outside")
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.link(work, outside)
			_, err := Plan(Options{Agent: tt.agent, Workdir: work, HomeDir: home, DisableBuiltinTools: true})
			if err == nil || !strings.Contains(err.Error(), "leads out of the project through a symbolic link") {
				t.Fatalf("err = %v", err)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("wrote outside the project: %v", entries)
			}
		})
	}
}

// OpenCode's config may be opencode.jsonc or sit in .opencode/: the file that exists is edited,
// as "opencode mcp add" does.
func TestPlanOpenCodeEditsTheFileThatExists(t *testing.T) {
	linuxPaths(t)
	for _, name := range []string{"opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"} {
		t.Run(name, func(t *testing.T) {
			home, work := testDirs(t)
			writeFile(t, filepath.Join(work, name), "{\n  // mine\n  \"model\": \"x/y\"\n}\n")
			c := mustPlan(t, Options{Agent: "opencode", Workdir: work, HomeDir: home})[0]
			if c.Path != filepath.Join(work, name) || c.Creates() {
				t.Errorf("path %s (creates %v)", c.Path, c.Creates())
			}
		})
	}
	home, work := testDirs(t)
	writeFile(t, filepath.Join(home, ".config/opencode/opencode.jsonc"), "{}")
	if c := mustPlan(t, Options{Agent: "opencode", Workdir: work, HomeDir: home, User: true})[0]; c.Path != filepath.Join(home, ".config/opencode/opencode.jsonc") {
		t.Errorf("user path %s", c.Path)
	}
}

func TestPlanEditorClientsUserPaths(t *testing.T) {
	home, work := testDirs(t)
	xdg := filepath.Join(home, "xdg")
	appData := filepath.Join(home, "roaming")
	tests := []struct {
		goos, xdg, appData string
		want               map[string]string
	}{
		{"linux", "", "", map[string]string{
			"opencode": filepath.Join(home, ".config/opencode/opencode.json"),
			"vscode":   filepath.Join(home, ".config/Code/User/mcp.json"),
			"zed":      filepath.Join(home, ".config/zed/settings.json"),
		}},
		{"linux", xdg, "", map[string]string{
			"opencode": filepath.Join(xdg, "opencode/opencode.json"),
			"vscode":   filepath.Join(xdg, "Code/User/mcp.json"),
			"zed":      filepath.Join(xdg, "zed/settings.json"),
		}},
		{"linux", "relative/ignored", "", map[string]string{
			"zed": filepath.Join(home, ".config/zed/settings.json"),
		}},
		{"darwin", xdg, "", map[string]string{
			"opencode": filepath.Join(xdg, "opencode/opencode.json"),
			"vscode":   filepath.Join(home, "Library/Application Support/Code/User/mcp.json"),
			"zed":      filepath.Join(home, ".config/zed/settings.json"),
		}},
		{"windows", "", appData, map[string]string{
			"vscode": filepath.Join(appData, "Code/User/mcp.json"),
			"zed":    filepath.Join(appData, "Zed/settings.json"),
		}},
		{"windows", "", "", map[string]string{
			"zed": filepath.Join(home, "AppData/Roaming/Zed/settings.json"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.goos+"/"+tt.xdg+tt.appData, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", tt.xdg)
			t.Setenv("APPDATA", tt.appData)
			old := goos
			goos = tt.goos
			defer func() { goos = old }()
			for agent, want := range tt.want {
				if c := mustPlan(t, Options{Agent: agent, Workdir: work, HomeDir: home, User: true})[0]; c.Path != want {
					t.Errorf("%s: %s, want %s", agent, c.Path, want)
				}
			}
		})
	}
}

func TestPlanEditorClientsNotes(t *testing.T) {
	linuxPaths(t)
	home, work := testDirs(t)
	notes := func(o Options) string {
		var all []string
		for _, c := range mustPlan(t, o) {
			all = append(all, c.Notes...)
		}
		return strings.Join(all, "\n")
	}
	for _, tt := range []struct {
		o         Options
		want, not []string
	}{
		{Options{Agent: "opencode"}, []string{"opencode mcp list", "--disable-builtin-tools denies them"}, nil},
		{Options{Agent: "opencode", DisableBuiltinTools: true}, []string{"webfetch, websearch", "are denied"}, []string{"--disable-builtin-tools"}},
		{Options{Agent: "vscode", ServerName: "vm"}, []string{"trust it", `leave only the "vm" tools checked`, `["vm/*"]`}, []string{"default profile"}},
		{Options{Agent: "vscode", User: true}, []string{"MCP: Open User Configuration", "Configure Tools"}, nil},
		{Options{Agent: "zed"}, []string{"trust the project", "title bar", "--disable-builtin-tools adds an agent profile"}, nil},
		{Options{Agent: "zed", DisableBuiltinTools: true}, []string{"user settings only", "limactl mcp configure zed --user --disable-builtin-tools"}, nil},
		{Options{Agent: "zed", User: true, DisableBuiltinTools: true}, []string{`default profile is now "lima"`}, []string{"trust"}},
	} {
		o := tt.o
		o.Workdir, o.HomeDir = work, home
		n := notes(o)
		for _, w := range tt.want {
			if !strings.Contains(n, w) {
				t.Errorf("%+v: notes lack %q:\n%s", tt.o, w, n)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(n, w) {
				t.Errorf("%+v: notes say %q:\n%s", tt.o, w, n)
			}
		}
	}
}

func TestPlanEditorClientsCustomNameAndCommand(t *testing.T) {
	linuxPaths(t)
	home, work := testDirs(t)
	cmd := []string{"/usr/local/bin/limactl", "mcp", "serve", "box"}
	mustApply(t, mustPlan(t, Options{Agent: "opencode", Workdir: work, HomeDir: home, ServerName: "vm", Command: cmd}))
	if got := dig(t, decodeFile(t, filepath.Join(work, "opencode.json"), false), "mcp", "vm", "command"); !reflect.DeepEqual(got, []any{"/usr/local/bin/limactl", "mcp", "serve", "box"}) {
		t.Errorf("command = %v", got)
	}
	mustApply(t, mustPlan(t, Options{Agent: "zed", Workdir: work, HomeDir: home, User: true, DisableBuiltinTools: true, ServerName: "vm", Command: cmd}))
	m := decodeFile(t, filepath.Join(home, ".config/zed/settings.json"), false)
	if got := dig(t, m, "agent", "profiles", "vm", "name"); got != "Lima VM (vm)" {
		t.Errorf("profile name = %v", got)
	}
	if got := dig(t, m, "context_servers", "vm", "command"); got != "/usr/local/bin/limactl" {
		t.Errorf("command = %v", got)
	}
}
