//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/agentconfig"
)

// The real agent clients, installed by hack/e2e/install-clients.sh: for each, after
// `limactl-mcp configure CLIENT --disable-builtin-tools`, the client's own MCP listing command
// must report our server (and, where it checks, connect to it: the client runs `limactl mcp
// serve mcp-e2e` against the real VM), offline, with no API key, and where the client can say
// without a key which tools it offers or whether its settings are sound, that its built-ins are
// off and nothing is flagged.

const (
	// clientsDirEnv names the directory hack/e2e/install-clients.sh installed the clients into,
	// when not the default.
	clientsDirEnv     = "LIMACTL_MCP_CLIENTS_DIR"
	defaultClientsDir = "/var/cache/limactl-mcp-clients"
)

// agentClient is one client as install-clients.sh installs it.
type agentClient struct {
	Agent      string // configure's name for it
	Package    string // npm package
	Bin        string // executable in node_modules/.bin
	VersionVar string // the pin's variable in install-clients.sh
}

var agentClients = map[string]agentClient{
	"claude":   {"claude", "@anthropic-ai/claude-code", "claude", "CLAUDE_VERSION"},
	"gemini":   {"gemini", "@google/gemini-cli", "gemini", "GEMINI_VERSION"},
	"codex":    {"codex", "@openai/codex", "codex", "CODEX_VERSION"},
	"opencode": {"opencode", "opencode-ai", "opencode", "OPENCODE_VERSION"},
}

// installedClient returns the path of the client's executable, checked to be the version
// install-clients.sh pins. A missing or outdated installation fails the test: the clients are
// part of the end-to-end kit, not an optional extra.
func installedClient(t *testing.T, c agentClient) (bin, version string) {
	t.Helper()
	dir := os.Getenv(clientsDirEnv)
	if dir == "" {
		dir = defaultClientsDir
	}
	script := filepath.Join(vm.RepoRoot, "hack/e2e/install-clients.sh")
	fix := fmt.Sprintf("run, as root: hack/e2e/install-clients.sh %s (the CI entry point .ci/run must run it before the tests)", dir)
	src, err := os.ReadFile(script)
	mustT(t, err)
	m := regexp.MustCompile(`(?m)^` + c.VersionVar + `=(\S+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("no %s=... line in %s", c.VersionVar, script)
	}
	pinned := string(m[1])
	var pkg struct {
		Version string `json:"version"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "node_modules", c.Package, "package.json"))
	if err != nil {
		t.Fatalf("%s@%s is not installed in %s (%v): %s", c.Package, pinned, dir, err, fix)
	}
	mustT(t, json.Unmarshal(data, &pkg))
	if pkg.Version != pinned {
		t.Fatalf("%s in %s is version %s, install-clients.sh pins %s: %s", c.Package, dir, pkg.Version, pinned, fix)
	}
	bin = filepath.Join(dir, "node_modules/.bin", c.Bin)
	if st, err := os.Stat(bin); err != nil || st.Mode().Perm()&0o001 == 0 {
		t.Fatalf("%s is missing or not executable by others (%v): %s", bin, err, fix)
	}
	return bin, pinned
}

// clientHome makes an empty home directory for the client, owned by the user, next to the
// test's projects (not under /tmp: Codex refuses to put its helpers there), so that the client
// never reads or writes the user's real one.
func clientHome(t *testing.T, project string) string {
	t.Helper()
	home := project + "-home"
	mustT(t, os.MkdirAll(home, 0o755))
	chownToUser(t, home)
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	return home
}

// writeUserFile writes a file under the client's home, as the user's.
func writeUserFile(t *testing.T, home, rel, content string) {
	t.Helper()
	p := filepath.Join(home, rel)
	mustT(t, os.MkdirAll(filepath.Dir(p), 0o755))
	mustT(t, os.WriteFile(p, []byte(content), 0o644))
	chownToUser(t, home)
}

// runClient runs the client as the user, in dir, with home as HOME (and the XDG directories
// under it), vm.Env's PATH (our plugin first, then limactl), no API key, and returns its
// combined output (colour codes removed); a failure to run or a non-zero exit fails the test.
func runClient(t *testing.T, bin, dir, home string, args ...string) string {
	t.Helper()
	out, err := runClientExit(t, bin, dir, home, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return out
}

// runClientExit is runClient for a command whose exit status says something else too (codex
// doctor fails without credentials): its error is returned, not fatal.
func runClientExit(t *testing.T, bin, dir, home string, args ...string) (string, error) {
	t.Helper()
	out, _, err := runClientEnv(t, bin, dir, home, nil, args...)
	return out, err
}

// runClientEnv is runClientExit with more environment (later entries win) and the time taken.
func runClientEnv(t *testing.T, bin, dir, home string, env []string, args ...string) (string, time.Duration, error) {
	t.Helper()
	cmd := vm.Command(ctxT(t, 5*time.Minute), bin, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local/share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local/state"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"TERM=dumb", "NO_COLOR=1", "CI=1",
		// Claude Code: no updater, no telemetry, and time for the staging server to connect.
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "MCP_TIMEOUT=180000",
	)
	cmd.Env = append(cmd.Env, env...)
	t0 := time.Now()
	stdout, stderr, err := runCmd(cmd)
	took := time.Since(t0)
	out := ansiEscape.ReplaceAllString(stdout+stderr, "")
	shown := out
	if n := strings.Count(out, "\n"); n > 40 {
		shown = fmt.Sprintf("(%d lines; what the test checks is logged below)\n", n)
	}
	t.Logf("$ %s %s   (%s)\n%s", filepath.Base(bin), strings.Join(args, " "), took.Round(time.Millisecond), shown)
	return out, took, err
}

// configureClient runs `limactl-mcp configure AGENT --instance mcp-e2e --disable-builtin-tools`
// in a fresh project and returns the project and what configure printed.
func configureClient(t *testing.T, agent string) (dir, out string) {
	t.Helper()
	dir = project(t, map[string]string{"main.go": "package main\n", "README.md": "a project for " + agent + "\n"})
	// A client's health check connects to the server, which stages the project only at its
	// first tool call; discard whatever a client may have staged.
	t.Cleanup(func() {
		cmd := vm.Command(ctxT(t, time.Minute), ourBin, "discard", instanceName, "--yes")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "has no staged session") {
			t.Logf("discarding the staged session of %s: %v\n%s", dir, err, out)
		}
	})
	stdout, stderr, code := plugin(t, dir, "configure", agent, "--instance", instanceName, "--disable-builtin-tools")
	t.Logf("$ limactl-mcp configure %s --instance %s --disable-builtin-tools\n%s%s", agent, instanceName, stdout, stderr)
	if code != 0 {
		t.Fatalf("configure %s: exit %d\n%s\n%s", agent, code, stdout, stderr)
	}
	return dir, stdout + stderr
}

var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

func TestClientClaudeCode(t *testing.T) {
	bin, version := installedClient(t, agentClients["claude"])
	dir, _ := configureClient(t, "claude")
	home := clientHome(t, dir)
	// Approve the project's .mcp.json servers the way Claude Code documents for a non-interactive
	// setup (settings: enableAllProjectMcpServers), in the user's settings of the temporary home.
	writeUserFile(t, home, ".claude/settings.json", `{"enableAllProjectMcpServers": true}`+"\n")

	got := strings.TrimSpace(runClient(t, bin, dir, home, "--version"))
	t.Logf("Claude Code version: %s (pinned %s)", got, version)
	if !strings.HasPrefix(got, version) {
		t.Errorf("claude --version = %q, want %s", got, version)
	}

	list := runClient(t, bin, dir, home, "mcp", "list")
	want := "lima: limactl mcp serve " + instanceName + " - ✔ Connected"
	if !strings.Contains(list, want) {
		t.Errorf("claude mcp list does not report %q:\n%s", want, list)
	}
	t.Logf("Claude Code %s, claude mcp list: %s", version, lineWith(list, "lima:"))

	// claude doctor checks the permission rules against the tools it has: every rule that
	// configure wrote must name a real tool, and nothing else may be flagged.
	doctor := runClient(t, bin, dir, home, "doctor")
	for _, bad := range []string{"matches no known tool", "Permission rules that may not work", "Invalid settings", "settings.json:"} {
		if strings.Contains(doctor, bad) {
			t.Errorf("claude doctor flags the settings configure wrote (%q):\n%s", bad, doctor)
		}
	}
	if !strings.Contains(doctor, "Claude Code doctor") {
		t.Errorf("claude doctor did not run:\n%s", doctor)
	}
	// The deny list: what configure wrote is what claude reads.
	var settings struct {
		Permissions struct {
			Deny []string `json:"deny"`
		} `json:"permissions"`
	}
	mustT(t, json.Unmarshal([]byte(readHost(t, filepath.Join(dir, ".claude/settings.json"))), &settings))
	for _, tool := range []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep", "LSP", "NotebookEdit", "EnterWorktree"} {
		if !slices.Contains(settings.Permissions.Deny, tool) {
			t.Errorf(".claude/settings.json denies %v, not %s", settings.Permissions.Deny, tool)
		}
	}
	t.Logf("Claude Code %s, claude doctor: no permission rule flagged; denied: %s", version, strings.Join(settings.Permissions.Deny, ", "))
}

func TestClientGeminiCLI(t *testing.T) {
	bin, version := installedClient(t, agentClients["gemini"])
	dir, _ := configureClient(t, "gemini")
	home := clientHome(t, dir)
	// Trust the project the way Gemini CLI documents (docs/cli/trusted-folders.md): the user's
	// ~/.gemini/trustedFolders.json maps the folder to TRUST_FOLDER.
	trusted, _ := json.Marshal(map[string]string{dir: "TRUST_FOLDER"})
	writeUserFile(t, home, ".gemini/trustedFolders.json", string(trusted)+"\n")

	got := strings.TrimSpace(runClient(t, bin, dir, home, "--version"))
	t.Logf("Gemini CLI version: %s (pinned %s)", got, version)
	if got != version {
		t.Errorf("gemini --version = %q, want %s", got, version)
	}

	list := runClient(t, bin, dir, home, "mcp", "list")
	want := "✓ lima: limactl mcp serve " + instanceName + " (stdio) - Connected"
	if !strings.Contains(list, want) {
		t.Errorf("gemini mcp list does not report %q:\n%s", want, list)
	}
	// Gemini CLI validates its settings as it loads them: no warning about what configure
	// wrote, no untrusted folder. One is known and left for now: Gemini CLI 0.61.0 calls
	// tools.exclude deprecated ("will be removed in 1.0"), and its replacement, project-level
	// policy files, is not in force yet (docs/reference/policy-engine.md, issue 18186).
	const knownDeprecation = "Warning: tools.exclude in settings.json is deprecated"
	rest := list
	if line := lineWith(list, knownDeprecation); line != "" {
		t.Logf("Gemini CLI %s warns, as known: %s", version, line)
		rest = strings.Replace(list, line, "", 1)
	}
	for _, bad := range []string{"Warning", "deprecated", "untrusted", "Error", "invalid"} {
		if strings.Contains(rest, bad) {
			t.Errorf("gemini mcp list warns (%q) about the configured project:\n%s", bad, list)
		}
	}
	t.Logf("Gemini CLI %s, gemini mcp list: %s", version, lineWith(list, "lima:"))
}

func TestClientCodex(t *testing.T) {
	bin, version := installedClient(t, agentClients["codex"])
	dir, _ := configureClient(t, "codex")
	home := clientHome(t, dir)
	// Trust the project the way Codex documents: [projects."PATH"] trust_level = "trusted" in
	// the user's ~/.codex/config.toml (what its trust prompt writes).
	writeUserFile(t, home, ".codex/config.toml", fmt.Sprintf("[projects.%q]\ntrust_level = \"trusted\"\n", dir))

	got := strings.TrimSpace(lastLine(runClient(t, bin, dir, home, "--version")))
	t.Logf("Codex version: %s (pinned %s)", got, version)
	if !strings.HasSuffix(got, version) {
		t.Errorf("codex --version = %q, want %s", got, version)
	}

	// codex mcp list does not start the servers: it reports them as configured and enabled.
	list := runClient(t, bin, dir, home, "mcp", "list", "--json")
	var servers []struct {
		Name      string `json:"name"`
		Enabled   bool   `json:"enabled"`
		Transport struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"transport"`
	}
	if err := json.Unmarshal([]byte(list[strings.Index(list, "["):]), &servers); err != nil {
		t.Fatalf("codex mcp list --json: %v\n%s", err, list)
	}
	found := false
	for _, s := range servers {
		if s.Name == "lima" {
			found = true
			if !s.Enabled || s.Transport.Type != "stdio" || s.Transport.Command != "limactl" || strings.Join(s.Transport.Args, " ") != "mcp serve "+instanceName {
				t.Errorf("codex mcp list --json: lima is %+v", s)
			}
		}
	}
	if !found {
		t.Errorf("codex mcp list --json does not list lima:\n%s", list)
	}
	t.Logf("Codex %s, codex mcp list: %s", version, lineWith(runClient(t, bin, dir, home, "mcp", "list"), "lima"))

	// Which tools Codex offers, without a key: its feature flags, read from the trusted
	// project's config. The shell tool and view_image (host files) are off.
	features := runClient(t, bin, dir, home, "features", "list")
	for _, f := range []string{"shell_tool", "view_image"} {
		line := lineWith(features, f+" ")
		if fields := strings.Fields(line); len(fields) == 0 || fields[len(fields)-1] != "false" {
			t.Errorf("codex features list: %q is not off: %q", f, line)
		}
		t.Logf("Codex %s, codex features list: %s", version, strings.Join(strings.Fields(line), " "))
	}

	// codex doctor checks the config and each MCP server (that its command resolves on PATH).
	doc, _ := runClientExit(t, bin, dir, home, "doctor", "--json") // exit 1: no credentials
	var report struct {
		Checks map[string]struct {
			Status  string         `json:"status"`
			Summary string         `json:"summary"`
			Details map[string]any `json:"details"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(doc[strings.Index(doc, "{"):]), &report); err != nil {
		t.Fatalf("codex doctor --json: %v\n%s", err, doc)
	}
	var seen []string
	for id, c := range report.Checks {
		if !strings.HasPrefix(id, "config") && !strings.HasPrefix(id, "mcp") {
			continue
		}
		seen = append(seen, id+": "+c.Status+" ("+c.Summary+")")
		if c.Status != "ok" {
			t.Errorf("codex doctor: %s is %s: %s %v", id, c.Status, c.Summary, c.Details)
		}
	}
	slices.Sort(seen)
	if len(seen) == 0 {
		t.Errorf("codex doctor --json has no config or mcp checks:\n%s", doc)
	}
	t.Logf("Codex %s, codex doctor: %s", version, strings.Join(seen, "; "))
}

func TestClientOpenCode(t *testing.T) {
	bin, version := installedClient(t, agentClients["opencode"])
	if !slices.Contains(agentconfig.AgentNames(), "opencode") {
		t.Fatalf("configure has no opencode planner yet (agents: %v): issue 11 needs `limactl mcp configure opencode`", agentconfig.AgentNames())
	}
	dir, _ := configureClient(t, "opencode")
	home := clientHome(t, dir)

	got := strings.TrimSpace(lastLine(runClient(t, bin, dir, home, "--version")))
	t.Logf("OpenCode version: %s (pinned %s)", got, version)
	if got != version {
		t.Errorf("opencode --version = %q, want %s", got, version)
	}

	list := runClient(t, bin, dir, home, "mcp", "list")
	line := lineWith(list, " lima")
	if !strings.Contains(line, "✓") || !strings.Contains(line, "connected") {
		t.Errorf("opencode mcp list does not report lima as connected:\n%s", list)
	}
	t.Logf("OpenCode %s, opencode mcp list: %s", version, strings.TrimSpace(line))
}

// lineWith returns the first line of out that contains s, or "".
func lineWith(out, s string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, s) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// lastLine returns the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
