package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/configurecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// runConfigureCmd runs "configure ARGS..." and returns what it printed.
func runConfigureCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	cmd := configurecmd.NewCmd(cmdutil.New(ios), nil)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.Execute()
	return out.String(), err
}

func TestConfigureWritesAndIsIdempotent(t *testing.T) {
	work := t.TempDir()
	out, err := runConfigureCmd(t, "claude", "--workdir", work, "--instance", "dev", "--disable-builtin-tools")
	if err != nil {
		t.Fatal(err)
	}
	mcpPath := filepath.Join(work, ".mcp.json")
	settingsPath := filepath.Join(work, ".claude", "settings.json")
	for _, want := range []string{
		"created " + mcpPath + `: MCP server "lima" runs "limactl mcp serve dev"`,
		"created " + settingsPath + ": deny Claude Code's built-in tools Bash,",
		"note: Claude Code asks each user to approve",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	b, err := os.ReadFile(mcpPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if s := cfg.MCPServers["lima"]; s.Type != "stdio" || s.Command != "limactl" || !reflect.DeepEqual(s.Args, []string{"mcp", "serve", "dev"}) {
		t.Errorf("server entry %+v", s)
	}

	out, err = runConfigureCmd(t, "claude", "--workdir", work, "--instance", "dev", "--disable-builtin-tools")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "already configured: "+mcpPath+"\n") || !strings.Contains(out, "already configured: "+settingsPath+"\n") {
		t.Errorf("second run:\n%s", out)
	}
}

func TestConfigureDryRunWritesNothing(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work) // --workdir defaults to the current directory
	out, err := runConfigureCmd(t, "codex", "--dry-run", "--name", "vm")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(work, ".codex", "config.toml")
	for _, want := range []string{
		"would create " + path + `: MCP server "vm" runs "limactl mcp serve default"`,
		"--- /dev/null\n+++ " + path + "\n",
		"+[mcp_servers.vm]\n",
		"+args = [\"mcp\", \"serve\", \"default\"]\n",
		"note: Codex reads a project's .codex/config.toml only when you trust the project.",
		"dry run: nothing was written\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(work, ".codex")); !os.IsNotExist(err) {
		t.Errorf("dry run wrote something: %v", err)
	}
}

func TestConfigureUser(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	path := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{\n  \"ui\": {\"theme\": \"GitHub\"}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runConfigureCmd(t, "gemini", "--user", "--workdir", work)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "updated "+path+": ") {
		t.Errorf("output:\n%s", out)
	}
	b, _ := os.ReadFile(path)
	want := "{\n  \"ui\": {\"theme\": \"GitHub\"},\n  \"mcpServers\": {\n    \"lima\": {\n      \"command\": \"limactl\",\n      \"args\": [\n        \"mcp\",\n        \"serve\",\n        \"default\"\n      ]\n    }\n  }\n}\n"
	if string(b) != want {
		t.Errorf("settings:\n%s", b)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("--user wrote into the project: %v", entries)
	}
}

func TestConfigureErrors(t *testing.T) {
	work := t.TempDir()
	if _, err := runConfigureCmd(t, "vim", "--workdir", work); err == nil || !strings.Contains(err.Error(), `unknown agent "vim"`) {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := runConfigureCmd(t, "--workdir", work); err == nil {
		t.Error("no agent: no error")
	}
	bad := filepath.Join(work, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("{oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runConfigureCmd(t, "cursor", "--workdir", work); err == nil || !strings.Contains(err.Error(), "refusing to change "+bad) {
		t.Errorf("unparseable file: %v", err)
	}
	if b, _ := os.ReadFile(bad); string(b) != "{oops" {
		t.Errorf("the file changed: %s", b)
	}
}

func TestConfigureCompletion(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	cmd := configurecmd.NewCmd(cmdutil.New(ios), nil)
	got, directive := cmd.ValidArgsFunction(cmd, nil, "")
	want := []cobra.Completion{"claude\tClaude Code", "codex\tCodex", "cursor\tCursor", "gemini\tGemini CLI",
		"opencode\tOpenCode", "vscode\tVS Code (GitHub Copilot)", "zed\tZed"}
	if !reflect.DeepEqual(got, want) || directive != cobra.ShellCompDirectiveNoFileComp {
		t.Errorf("completions %q, %v", got, directive)
	}
	if got, _ := cmd.ValidArgsFunction(cmd, []string{"claude"}, ""); len(got) != 0 {
		t.Errorf("second argument completions %q", got)
	}
}

// The home directory is no project: configure refuses it before writing anything (--user is
// the way to configure every project).
func TestConfigureRefusesHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, args := range [][]string{{"claude", "--workdir", home}, {"gemini", "--workdir", home, "--dry-run"}} {
		_, err := runConfigureCmd(t, args...)
		if err == nil || !strings.Contains(err.Error(), "refusing to configure your home directory") || !strings.Contains(err.Error(), "pass --user") {
			t.Errorf("%v: %v", args, err)
		}
	}
	t.Chdir(home)
	if _, err := runConfigureCmd(t, "codex"); err == nil || !strings.Contains(err.Error(), "refusing to configure your home directory") {
		t.Errorf("from the home directory: %v", err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("configure wrote into the home directory: %v", entries)
	}
	// A project below it is fine.
	proj := filepath.Join(home, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runConfigureCmd(t, "claude", "--workdir", proj); err != nil {
		t.Errorf("a project in the home directory: %v", err)
	}
}

// OpenCode, VS Code and Zed: written, shown by --dry-run, and left alone on a second run.
func TestConfigureEditorClients(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the user paths checked here are Linux's")
	}
	home, work := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")

	out, err := runConfigureCmd(t, "opencode", "--workdir", work, "--instance", "dev", "--disable-builtin-tools")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(work, "opencode.json")
	for _, want := range []string{
		"created " + path + `: MCP server "lima" runs "limactl mcp serve dev"; deny OpenCode's built-in tools bash, read, edit, glob, grep, lsp`,
		"note: OpenCode needs no approval",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if out, err := runConfigureCmd(t, "opencode", "--workdir", work, "--instance", "dev", "--disable-builtin-tools"); err != nil || !strings.Contains(out, "already configured: "+path+"\n") {
		t.Errorf("second run (%v):\n%s", err, out)
	}

	out, err = runConfigureCmd(t, "vscode", "--workdir", work, "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(work, ".vscode", "mcp.json")
	for _, want := range []string{
		"would create " + path + `: MCP server "lima" runs "limactl mcp serve default"`,
		"+  \"servers\": {\n",
		"+      \"type\": \"stdio\",\n",
		"note: GitHub Copilot's own agent tools",
		"dry run: nothing was written\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("dry run wrote something: %v", err)
	}

	out, err = runConfigureCmd(t, "zed", "--user", "--workdir", work, "--disable-builtin-tools")
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(home, ".config", "zed", "settings.json")
	if !strings.Contains(out, "created "+path+": ") || !strings.Contains(out, `note: The Zed Agent's default profile is now "lima"`) {
		t.Errorf("output:\n%s", out)
	}
	var settings struct {
		ContextServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"context_servers"`
		Agent struct {
			DefaultProfile string `json:"default_profile"`
		} `json:"agent"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatal(err)
	}
	if s := settings.ContextServers["lima"]; s.Command != "limactl" || !reflect.DeepEqual(s.Args, []string{"mcp", "serve", "default"}) || settings.Agent.DefaultProfile != "lima" {
		t.Errorf("settings:\n%s", b)
	}
	if out, err := runConfigureCmd(t, "zed", "--user", "--workdir", work, "--disable-builtin-tools"); err != nil || !strings.Contains(out, "already configured: "+path+"\n") {
		t.Errorf("second run (%v):\n%s", err, out)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 1 { // opencode.json only
		t.Errorf("the project holds %v", entries)
	}
}

// configure --list says which agents run the server in this project, whether their own tools
// are off (or cannot be turned off there), and the command for what is missing; it writes
// nothing.
func TestConfigureList(t *testing.T) {
	work := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	out, err := runConfigureCmd(t, "--list", "--workdir", work, "--instance", "dev")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, `MCP server "lima" running `+"`limactl mcp serve dev`"+`, in the project `+work+":\n") ||
		!strings.Contains(out, "  claude    not configured: `limactl mcp configure claude --instance dev`\n") {
		t.Errorf("before:\n%s", out)
	}
	for _, args := range [][]string{{"claude", "--disable-builtin-tools"}, {"gemini"}, {"zed"}} {
		if _, err := runConfigureCmd(t, append(args, "--workdir", work, "--instance", "dev")...); err != nil {
			t.Fatal(err)
		}
	}
	before := listDir(t, work)
	out, err = runConfigureCmd(t, "--list", "--workdir", work, "--instance", "dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  claude    configured; its own file and shell tools off (.mcp.json, .claude/settings.json)\n",
		"  gemini    configured; its own file and shell tools on: `limactl mcp configure gemini --instance dev --disable-builtin-tools` turns them off (.gemini/settings.json)\n",
		"  zed       configured; its own tools cannot be turned off from the project " + work,
		"  codex     not configured: `limactl mcp configure codex --instance dev`\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--list lacks %q:\n%s", want, out)
		}
	}
	// Another instance: nothing runs it.
	out, _ = runConfigureCmd(t, "--list", "claude", "--workdir", work, "--instance", "other")
	if !strings.Contains(out, "  claude    not configured: `limactl mcp configure claude --instance other`\n") || strings.Contains(out, "gemini") {
		t.Errorf("--list claude for another instance:\n%s", out)
	}
	if after := listDir(t, work); !reflect.DeepEqual(before, after) {
		t.Errorf("--list changed the project:\n%v\n%v", before, after)
	}
	if _, err := runConfigureCmd(t, "--list", "vim", "--workdir", work); err == nil || !strings.Contains(err.Error(), `unknown agent "vim"`) {
		t.Errorf("--list vim: %v", err)
	}
	if _, err := runConfigureCmd(t, "--workdir", work); err == nil || !strings.Contains(err.Error(), "or --list") {
		t.Errorf("no agent: %v", err)
	}
}

// listDir maps every path under dir to its content.
func listDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		data, _ := os.ReadFile(p)
		m[p] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Configuring again without --disable-builtin-tools after a run with it does not say the
// agent's tools "stay available": they are off, and it says so.
func TestConfigureRerunNotesAgree(t *testing.T) {
	work := t.TempDir()
	for _, agent := range []string{"claude", "gemini", "codex", "opencode"} {
		if _, err := runConfigureCmd(t, agent, "--workdir", work, "--disable-builtin-tools"); err != nil {
			t.Fatal(err)
		}
		out, err := runConfigureCmd(t, agent, "--workdir", work)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "stay available;") || !strings.Contains(out, "already off here, from an earlier --disable-builtin-tools") {
			t.Errorf("%s, run again:\n%s", agent, out)
		}
	}
	// Without an earlier --disable-builtin-tools, the note says they stay available.
	other := t.TempDir()
	out, err := runConfigureCmd(t, "claude", "--workdir", other)
	if err != nil || !strings.Contains(out, "stay available;") || strings.Contains(out, "already off") {
		t.Errorf("claude, first run: %v\n%s", err, out)
	}
}

// --session puts the session into the server's command, so that two agents configured for one
// project work on copies of their own; a bad name writes nothing.
func TestConfigureSession(t *testing.T) {
	work := t.TempDir()
	out, err := runConfigureCmd(t, "codex", "--workdir", work, "--dry-run", "--session", "fix-a", "--network", "none")
	if err != nil {
		t.Fatal(err)
	}
	if want := "+args = [\"mcp\", \"serve\", \"default\", \"--network=none\", \"--session=fix-a\"]\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	out, err = runConfigureCmd(t, "codex", "--workdir", work, "--dry-run", "--session", "default")
	if err != nil || !strings.Contains(out, "+args = [\"mcp\", \"serve\", \"default\"]\n") {
		t.Errorf("--session default is the unnamed session: %v\n%s", err, out)
	}
	if _, err := runConfigureCmd(t, "codex", "--workdir", work, "--session", "a b"); err == nil || !strings.Contains(err.Error(), "--session") {
		t.Errorf("a bad name: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, ".codex")); !os.IsNotExist(err) {
		t.Errorf("something was written: %v", err)
	}
}
