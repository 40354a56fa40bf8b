package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `serve` run by a person in a terminal, for an instance that does not exist: it stays up,
// says what it is for and how an agent should start it, names the instances there are, and
// when the person types at it anyway, says again what it is instead of a bare JSON error. Run
// for real: the binary in a tmux pane, with a stand-in limactl.
func TestServeInATerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (hack/e2e/setup.sh installs it)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "limactl-mcp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	limactl := filepath.Join(dir, "limactl")
	script := `#!/bin/sh
case "$*" in
"list --format {{.Name}}") echo confs; echo default ;;
*) echo "No instance matching $3 found." >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(limactl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "tmx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out)
	}
	cmd := "trap : INT; cd " + dir + " && env LIMACTL=" + limactl + " TERM=xterm " + bin + " serve confz; echo EXIT=$?; sleep 30"
	tmux("new-session", "-d", "-s", "s", "-x", "200", "-y", "50", cmd)
	t.Cleanup(func() { tmux("kill-server") })
	screen := func() string { return tmux("capture-pane", "-p", "-J", "-t", "s") }
	waitFor := func(want ...string) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			s := screen()
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(s, w)
			}
			if ok {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("the screen never showed %q:\n%s", want, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("This is an MCP server for an AI agent", "limactl mcp configure claude", `no such Lima instance \"confz\": did you mean \"confs\"?`)
	tmux("send-keys", "-t", "s", "hello", "Enter")
	s := waitFor("EXIT=")
	if strings.Count(s, "This is an MCP server for an AI agent") < 2 {
		t.Errorf("after typing, the screen does not say again what this is:\n%s", s)
	}
}
