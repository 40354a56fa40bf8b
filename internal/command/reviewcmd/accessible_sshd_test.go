package reviewcmd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
)

// accessibleTUI is a Decide that runs the review TUI in accessible mode (tuidemo, the real
// tui.Run) in tmux on the changeset the review built, lets drive answer it, and returns its
// decisions.
func accessibleTUI(t *testing.T, drive func(s *tmuxtest.Session)) func(cs *review.Changeset) ([]review.Decision, error) {
	return func(cs *review.Changeset) ([]review.Decision, error) {
		dir := t.TempDir()
		demo := filepath.Join(dir, "tuidemo")
		if out, err := exec.Command("go", "build", "-o", demo, "../../review/tui/tuidemo").CombinedOutput(); err != nil {
			t.Fatalf("go build tuidemo: %v\n%s", err, out)
		}
		data, err := json.Marshal(cs)
		if err != nil {
			t.Fatal(err)
		}
		fixture, result := filepath.Join(dir, "cs.json"), filepath.Join(dir, "result.json")
		if err := os.WriteFile(fixture, data, 0o644); err != nil {
			t.Fatal(err)
		}
		line := "env -u CI TERM=xterm-256color NO_COLOR= timeout --foreground 60 " + tmuxtest.Quote(demo, "-accessible", fixture, result) + "; sleep 30"
		s := tmuxtest.Start(t, 100, 50, line)
		drive(s)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if data, err := os.ReadFile(result); err == nil {
				var decs []review.Decision
				if err := json.Unmarshal(data, &decs); err != nil {
					return nil, fmt.Errorf("result %s: %v", data, err)
				}
				return decs, nil
			}
			time.Sleep(30 * time.Millisecond)
		}
		t.Fatalf("no result; screen:\n%s", s.Screen())
		return nil, nil
	}
}

// In accessible mode a person sees an added and a deleted file's lines, chooses lines within
// a hunk, and the host file gets exactly those lines; the rest stays pending in the guest.
func TestReviewAccessibleChosenLinesOnHost(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"notes.txt": "one\ntwo\nthree\n", "gone.txt": "gone line\n"})
	f.Guest("printf 'one\\nTWO\\nthree\\nfour\\n' > notes.txt && printf 'fresh\\nlines\\n' > new.txt && rm gone.txt")
	drive := func(s *tmuxtest.Session) {
		wait := func(want ...string) { t.Helper(); s.WaitFor(time.Minute, want...) }
		wait("Print the changes of every file first? [y/N]")
		s.TypeLine("y")
		wait("+fresh", "+lines", "-gone line", "D gone.txt", "A new.txt", "Enter a number between 0 and 3")
		s.TypeLine("0")
		wait("Choose lines within any of these files?", "1.   M notes.txt")
		s.TypeLine("1")
		wait("1. ✓ M notes.txt")
		s.TypeLine("0")
		wait("Hunk 1 of 1: what should happen?", "-two", "+TWO", "+four")
		s.TypeLine("3")
		wait("1. ✓ − two", "2. ✓ + TWO", "3. ✓ + four")
		s.TypeLine("1") // keep "two"
		wait("1.   − two")
		s.TypeLine("3") // leave "four" out
		wait("3.   + four")
		s.TypeLine("0")
		wait("write notes.txt (1 of 3 changed lines)", "create new.txt", "delete gone.txt", "Apply these changes? [y/N]")
		s.TypeLine("y")
	}
	r := run(t, f, reviewcmd.Options{Decide: accessibleTUI(t, drive)}, true)
	if r.err != nil {
		t.Fatalf("%v\nstdout %s\nstderr %s", r.err, r.out, r.errOut)
	}
	// As git applies a partial hunk: the removal not chosen stays, the chosen line after it.
	if got := f.ReadHost("notes.txt"); got != "one\ntwo\nTWO\nthree\n" {
		t.Errorf("notes.txt on the host: %q", got)
	}
	if n, g := f.ReadHost("new.txt"), f.ReadHost("gone.txt"); n != "fresh\nlines\n" || g != "<missing>" {
		t.Errorf("new.txt %q, gone.txt %q", n, g)
	}
	// What was left is pending: "two" removed, "four" added.
	r = run(t, f, reviewcmd.Options{DryRun: true}, false)
	wantLines(t, "pending", r.out, "  M notes.txt  +1 −1\n")
}
