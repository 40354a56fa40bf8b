package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// "l" in the file list shows the session's whole timeline, in the order things began, the
// agent's command and the guest's host name escaped; q comes back to the list. Without a
// timeline the help line does not offer it and the key does nothing.
func TestTUIShowsTimeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tl := timeline.Open(dir, "serve", nil)
	t0 := time.Date(2026, 1, 2, 10, 2, 11, 0, time.Local)
	zero := 0
	tl.Record(timeline.Event{Time: t0, Kind: timeline.ServeStart, Note: "network policy allow:pypi.test"})
	tl.Record(timeline.Event{Time: t0.Add(time.Second), Kind: timeline.Call, Tool: "run_shell_command", Command: "npm install\x1b[2J", DurationMS: 41_000, Exit: &zero})
	tl.Record(timeline.Event{Time: t0.Add(50 * time.Second), Kind: timeline.Call, Tool: "write_file", Paths: []string{"README.md"}, DurationMS: 12})
	// Written after the write, begun before it.
	tl.Record(timeline.Event{Time: t0.Add(3 * time.Second), Last: t0.Add(9 * time.Second), Kind: timeline.Network, Host: "evil\x1b]0;owned\x07.test", Port: 443, Verdict: "blocked", Via: "proxy", Count: 3})
	// Wide enough for each event on one line.
	s := startTUIAt(t, 120, 30, "", &review.Changeset{Items: []*review.Item{oneHunk(), added()}}, "-timeline", dir)
	s.waitFor("> ✓ M README.md", "l: timeline")
	s.keys("l")
	got := s.waitFor("Timeline of the session: 4 events", "10:02:11  serve   server started (network policy allow:pypi.test)",
		"10:02:12  serve   run_shell_command `npm install\\x1b[2J` (exit 0, 41 s)",
		"10:02:14  serve   network: blocked evil\\x1b]0;owned\\x07.test:443 (proxy), 3 attempts until 10:02:20",
		"10:03:01  serve   write_file README.md (12 ms)",
		"4 events: 2 tool calls (1 shell command), 0 failed", "; network: 0 attempts allowed, 3 attempts")
	if strings.Contains(got, "\x1b[2J") || strings.Contains(got, "\x1b]0;") {
		t.Errorf("the agent's or the guest's escape reached the terminal:\n%q", got)
	}
	if i, j := strings.Index(got, "network: blocked"), strings.Index(got, "write_file README.md"); i < 0 || j < i {
		t.Errorf("not in the order things began:\n%s", got)
	}
	s.keys("q")
	s.waitFor("> ✓ M README.md", "l: timeline")
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Error("not aborted")
	}

	// No timeline: no key.
	s = startTUI(t, &review.Changeset{Items: []*review.Item{oneHunk(), added()}})
	if got := s.waitFor("> ✓ M README.md", "v: view diff"); strings.Contains(got, "l: timeline") {
		t.Errorf("the help offers a timeline there is not:\n%s", got)
	}
	s.keys("l", "Down")
	if got := s.waitFor("> ✓ A docs/new.txt"); strings.Contains(got, "Timeline") {
		t.Errorf("l showed something:\n%s", got)
	}
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Error("not aborted")
	}
}
