//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// tmuxReview runs the real `limactl-mcp review` in an 80x24 tmux session, as the user, in dir.
type tmuxReview struct {
	t      *testing.T
	socket string
}

func startTmuxReview(t *testing.T, dir string, args ...string) *tmuxReview {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (hack/e2e/setup.sh installs it)")
	}
	cmd := vm.Command(ctxT(t, time.Minute), "limactl-mcp", append([]string{"review", instanceName}, args...)...)
	sockDir, err := os.MkdirTemp("", "tmx")
	mustT(t, err)
	r := &tmuxReview{t: t, socket: filepath.Join(sockDir, "s")}
	// The trap keeps the pane's shell (and so the screen) alive through a Ctrl-C sent to the
	// review; a handler is not inherited, so the review still gets the SIGINT.
	line := "trap : INT; cd " + shq(dir) + " && env -i"
	for _, kv := range append(cmd.Env, "TERM=xterm-256color") {
		line += " " + shq(kv)
	}
	line += " " + shq(cmd.Path)
	for _, a := range cmd.Args[1:] {
		line += " " + shq(a)
	}
	line += "; echo EXIT=$?; sleep 60"
	if out, err := r.tmux("new-session", "-d", "-s", "review", "-x", "80", "-y", "24", line); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen:\n%s", r.screen())
		}
		_, _ = r.tmux("kill-server")
		_ = os.RemoveAll(sockDir)
	})
	return r
}

func (r *tmuxReview) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", r.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

func (r *tmuxReview) screen() string {
	out, _ := r.tmux("capture-pane", "-p", "-t", "review")
	return out
}

func (r *tmuxReview) waitFor(wants ...string) string {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		scr := r.screen()
		ok := true
		for _, w := range wants {
			ok = ok && strings.Contains(scr, w)
		}
		if ok {
			return scr
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %q; screen:\n%s", wants, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *tmuxReview) keys(keys ...string) {
	r.t.Helper()
	if out, err := r.tmux(append([]string{"send-keys", "-t", "review"}, keys...)...); err != nil {
		r.t.Fatalf("send-keys: %v\n%s", err, out)
	}
}

// The real review command, driven in a terminal: accept some files, and abort with Ctrl-C.
func TestReviewTUI(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	toolsuite.MustOK(t, s.Session, "write_file", map[string]any{"path": dir + "/a.txt", "content": "a from the agent\n"})
	toolsuite.MustOK(t, s.Session, "write_file", map[string]any{"path": dir + "/b.txt", "content": "b from the agent\n"})

	// Ctrl-C on the file list: nothing written.
	r := startTmuxReview(t, dir)
	r.waitFor("2 files changed", "M a.txt", "M b.txt")
	r.keys("C-c")
	r.waitFor("Aborted: nothing was applied", "EXIT=1")
	if readHost(t, filepath.Join(dir, "a.txt")) != "a\n" || readHost(t, filepath.Join(dir, "b.txt")) != "b\n" {
		t.Fatal("Ctrl-C wrote to the host")
	}

	// Keep a.txt, leave b.txt pending.
	r = startTmuxReview(t, dir)
	r.waitFor("> ✓ M a.txt")
	r.keys("Down")
	r.waitFor("> ✓ M b.txt")
	r.keys("Space")
	r.waitFor("> • M b.txt")
	r.keys("Enter")
	r.waitFor("Also revert these rejected files in the guest?", "M b.txt")
	r.keys("Enter") // no: b.txt stays pending
	r.waitFor("Apply these changes?", "write a.txt")
	r.keys("y")
	r.waitFor("Applied: 1 path written", "EXIT=0")
	if readHost(t, filepath.Join(dir, "a.txt")) != "a from the agent\n" || readHost(t, filepath.Join(dir, "b.txt")) != "b\n" {
		t.Errorf("host: a.txt %q b.txt %q", readHost(t, filepath.Join(dir, "a.txt")), readHost(t, filepath.Join(dir, "b.txt")))
	}
	if st := statusOf(t, dir); st["pending_total"] != 1.0 {
		t.Errorf("pending after the review: %v", st)
	}
}
