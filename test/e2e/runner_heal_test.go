//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// In open mode the agent has sudo: it can replace root's runner with a same-size root-owned
// file, which the lstat check before a start accepts (a crash or a full disk during an install
// can leave the same). The next command notices the runner did not say hello, puts the
// embedded one back as root, starts it again and works; it says so in one line on stderr; the
// command after that starts it as usual, without a word.
func TestRunnerReplacedByRootHeals(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n"})
	chownToUser(t, dir)
	discardOnCleanup(t, dir)
	if _, stderr, code := plugin(t, dir, "shell", instanceName, "--", "true"); code != 0 {
		t.Fatalf("staging: exit %d\n%s", code, stderr)
	}
	// Same size, root's, 0755, in root's directory: zeros.
	replaced := guestShell(t, `sudo sh -c 'set -e; for f in /usr/local/libexec/limactl-mcp/runner-*; do s=$(stat -c %s "$f"); head -c "$s" /dev/zero > "$f.x"; chmod 755 "$f.x"; mv -f "$f.x" "$f"; echo "$f $s"; done'`)
	if strings.TrimSpace(replaced) == "" {
		t.Fatal("no root-owned runner to replace: the test tests nothing")
	}
	t.Logf("replaced %s", strings.TrimSpace(replaced))

	out, stderr, code := plugin(t, dir, "status", instanceName)
	if code != 0 || strings.Contains(out, "runner is not running") || !strings.Contains(out, "pending:    nothing") {
		t.Errorf("status after the replacement: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "did not start as expected") || !strings.Contains(stderr, "reinstalled it from the embedded copy") {
		t.Errorf("status did not say what happened:\n%s", stderr)
	}
	if n := strings.Count(strings.TrimSpace(stderr), "\n") + 1; n != 1 {
		t.Errorf("%d lines on stderr, want one:\n%s", n, stderr)
	}
	if got := guestShell(t, `cmp -s /dev/zero `+strings.Fields(replaced)[0]+` && echo zeros || echo runner`); strings.TrimSpace(got) != "runner" {
		t.Errorf("the runner file is still the replacement: %s", got)
	}
	// A shell command and the next status work, silently.
	stdout, stderr, code := plugin(t, dir, "shell", instanceName, "--", "cat", "a.txt")
	if code != 0 || stdout != "a\n" || strings.Contains(stderr, "did not start") {
		t.Errorf("shell after the heal: exit %d stdout %q\n%s", code, stdout, stderr)
	}
}

// On a terminal, a command that removes its session's marker and exits with the status the
// copy check uses is run once: the host checked the copy before it started, so nothing the
// command does afterwards makes `shell` stage the copy again and run it a second time.
func TestShellTerminalCommandRemovingTheMarkerRunsOnce(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n"})
	discardOnCleanup(t, dir)
	if _, stderr, code := mcpShell(t, dir, nil, instanceName, "--", "true"); code != 0 {
		t.Fatalf("staging: exit %d\n%s", code, stderr)
	}
	runs := fmt.Sprintf("/tmp/limactl-mcp-runs-%d", time.Now().UnixNano())
	t.Cleanup(func() { guestShell(t, "rm -f "+runs) })
	marker := "$HOME/.cache/limactl-mcp/sessions/" + staging.SessionID(dir)
	s := tmuxShell(t, dir, 100, 30, nil, "--no-review", instanceName, "--", "sh", "-c", "echo run >> "+runs+"; rm -f "+marker+"; exit 255")
	scr := s.WaitFor(3*time.Minute, "EXIT=")
	if got := guestShell(t, "cat "+runs); got != "run\n" {
		t.Errorf("the command ran %d times:\n%s", strings.Count(got, "run"), scr)
	}
	if !strings.Contains(scr, "not run again") || !strings.Contains(scr, "EXIT=255") {
		t.Errorf("shell did not say it did not run the command again, or exited otherwise:\n%s", scr)
	}
}
