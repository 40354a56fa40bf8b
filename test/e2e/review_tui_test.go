//go:build e2e

package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// tmuxReview runs the real `limactl-mcp review` in an 80x24 terminal, as the user, in dir.
type tmuxReview struct{ *tmuxtest.Session }

func startTmuxReview(t *testing.T, dir string, args ...string) *tmuxReview {
	t.Helper()
	cmd := vm.Command(ctxT(t, time.Minute), "limactl-mcp", append([]string{"review", instanceName}, args...)...)
	return &tmuxReview{tmuxCommand(t, dir, 80, 24, cmd, nil, "; echo EXIT=$?; sleep 60")}
}

func (r *tmuxReview) waitFor(wants ...string) string {
	return r.WaitFor(90*time.Second, wants...)
}

func (r *tmuxReview) keys(keys ...string) { r.Keys(keys...) }

func (r *tmuxReview) screen() string { return r.Screen() }

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
