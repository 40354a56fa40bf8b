package configurecmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/projectpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
)

// project makes a project directory holding files (empty).
func project(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Without a terminal: no question, the default unchanged, and the output says so, with what the
// project seems to need. --network wins over everything (and is checked).
func TestNetworkChoiceWithoutTerminal(t *testing.T) {
	t.Setenv("LIMACTL", "/nonexistent/limactl")
	dir := project(t, "go.mod", "package.json")
	ios, _, out, _ := iostreams.Test()
	opts := &Options{IO: ios, Agent: "claude", Instance: "agent", Workdir: dir,
		askNetwork: func(*Options, networkChoice) (string, error) { t.Fatal("asked without a terminal"); return "", nil }}
	if err := chooseNetwork(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if opts.Network != "" || !strings.Contains(out.String(), "the agent's network stays open, the default") ||
		!strings.Contains(out.String(), "pass --network=allow:@go,@npm") || !strings.Contains(out.String(), "go.mod → @go, package.json → @npm") {
		t.Errorf("network %q; output:\n%s", opts.Network, out.String())
	}

	ios.SetTTY(true, true)
	var asked networkChoice
	opts.askNetwork = func(_ *Options, c networkChoice) (string, error) { asked = c; return "allow:@go,@npm", nil }
	if err := chooseNetwork(context.Background(), opts); err != nil || opts.Network != "" || opts.projectNetwork != "allow:@go,@npm" || asked.Proposed != "allow:@go,@npm" {
		t.Errorf("on a terminal: %v, network %q (kept for the project: %q), asked %+v", err, opts.Network, opts.projectNetwork, asked)
	}
	opts.Network = "allow:x..org"
	if err := chooseNetwork(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "--network") {
		t.Errorf("a bad --network: %v", err)
	}
	opts.Network = "none"
	opts.askNetwork = func(*Options, networkChoice) (string, error) { t.Fatal("asked with --network"); return "", nil }
	if err := chooseNetwork(context.Background(), opts); err != nil || opts.Network != "none" {
		t.Errorf("--network none: %v %q", err, opts.Network)
	}
}

// The question in a real terminal (tmux): the proposed presets first, taken with Enter; a typed
// policy is checked before it is taken; Ctrl-C writes nothing.
func TestNetworkQuestionInTerminal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "limactl-mcp")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/limactl-mcp").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	home := t.TempDir()
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config) // projectpolicy.Load below reads where the command wrote
	run := func(t *testing.T, dir string) *tmuxtest.Session {
		line := "cd " + tmuxtest.Quote(dir) + " && env HOME=" + tmuxtest.Quote(home) + " XDG_CONFIG_HOME=" + tmuxtest.Quote(config) + " LIMACTL=/nonexistent/limactl TERM=xterm " +
			tmuxtest.Quote(bin, "configure", "claude", "--instance", "agent") + "; echo EXIT=$?; cat .mcp.json; sleep 60"
		return tmuxtest.Start(t, 160, 40, line)
	}

	t.Run("the proposed presets, with Enter", func(t *testing.T) {
		dir := project(t, "go.mod", "requirements.txt")
		term := run(t, dir)
		term.WaitFor(60*time.Second, "Which network may the agent's commands reach?", "allow:@go,@pypi  (proposed: go.mod → @go, requirements.txt → @pypi)", "none  (no network", "open  (the guest's network")
		term.Keys("Enter")
		scr := term.WaitFor(60*time.Second, "EXIT=0")
		checkKept(t, dir, "allow:@go,@pypi", scr)
	})
	t.Run("a typed policy, checked", func(t *testing.T) {
		dir := project(t)
		term := run(t, dir)
		term.WaitFor(60*time.Second, "No package manager's file was found", "another policy: type it")
		term.Keys("Down", "Down") // none, open, another
		term.Keys("Enter")
		term.WaitFor(30*time.Second, "Network policy")
		term.TypeLine("allow:example.com:99999")
		term.WaitFor(30*time.Second, "not a number from 1 to 65535")
		for i := 0; i < len("99999"); i++ {
			term.Keys("BSpace")
		}
		term.TypeLine("443,@npm")
		scr := term.WaitFor(60*time.Second, "EXIT=0")
		checkKept(t, dir, "allow:example.com:443,@npm", scr)
	})
	t.Run("Ctrl-C writes nothing", func(t *testing.T) {
		dir := project(t, "Cargo.toml")
		term := run(t, dir)
		term.WaitFor(60*time.Second, "allow:@crates  (proposed: Cargo.toml → @crates)")
		term.Keys("C-c")
		term.WaitFor(30*time.Second, "interrupted at the network question: nothing was written", "EXIT=130")
		if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); err == nil {
			t.Error(".mcp.json was written")
		}
	})
}

// checkKept checks that the answer is the project's policy on the host (projectpolicy), said on
// the screen, and not in the project's .mcp.json, which the agent could propose to change.
func checkKept(t *testing.T, dir, want, scr string) {
	t.Helper()
	f, path, ok, err := projectpolicy.Load(dir)
	if err != nil || !ok || f.Network != want || strings.HasPrefix(path, dir) {
		t.Errorf("the project's policy: %+v %q %v %v\nscreen:\n%s", f, path, ok, err, scr)
	}
	if !strings.Contains(strings.Join(strings.Fields(scr), " "), "network: "+want+" kept as the project's policy in") {
		t.Errorf("the screen does not say where the policy is kept:\n%s", scr)
	}
	data, err := os.ReadFile(filepath.Join(dir, ".mcp.json"))
	if err != nil || strings.Contains(string(data), "--network") || !strings.Contains(string(data), `"serve"`) {
		t.Errorf(".mcp.json: %v\n%s", err, data)
	}
}
