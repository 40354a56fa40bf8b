package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
)

// `serve` run by a person in a terminal, for an instance that does not exist: it stays up,
// says what it is for and how an agent should start it, names the instances there are, and
// when the person types at it anyway, says again what it is instead of a bare JSON error. Run
// for real: the binary in a tmux pane, with a stand-in limactl.
func TestServeInATerminal(t *testing.T) {
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
	term := tmuxtest.Start(t, 200, 50, "cd "+dir+" && env LIMACTL="+limactl+" TERM=xterm "+bin+" serve confz; echo EXIT=$?; sleep 30")
	term.WaitFor(30*time.Second, "This is an MCP server for an AI agent", "limactl mcp configure claude", `no such Lima instance \"confz\": did you mean \"confs\"?`)
	term.TypeLine("hello")
	s := term.WaitFor(30*time.Second, "EXIT=")
	if strings.Count(s, "This is an MCP server for an AI agent") < 2 {
		t.Errorf("after typing, the screen does not say again what this is:\n%s", s)
	}
}
