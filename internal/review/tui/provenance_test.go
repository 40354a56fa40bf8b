package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// The view of the file under the cursor (v) starts with its history: which recorded calls
// produced it, the agent's command escaped.
func TestTUIShowsHistory(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 10, 2, 11, 0, time.Local)
	zero := 0
	it := oneHunk()
	it.Provenance = &timeline.Provenance{
		Named:     []timeline.Ref{{Time: at, Kind: timeline.Call, Tool: "write_file", DurationMS: 12}},
		ChangedBy: []timeline.Ref{{Time: at.Add(209 * time.Second), Kind: timeline.Call, Tool: "run_shell_command", Command: "npm install\x1b[2J", Exit: &zero, DurationMS: 41_000}},
	}
	s := startTUI(t, &review.Changeset{Items: []*review.Item{it, added()}})
	s.waitFor("> ✓ M README.md")
	s.keys("v")
	// The line wraps at 80 columns; the escape is shown, not sent.
	if got := s.waitFor("history: written by write_file at 10:02:11; then modified by", "`npm install\\x1b[2J", "(exit 0, 41 s) at 10:05:40", "+brave new world"); strings.Contains(got, "\x1b[2J") {
		t.Errorf("the agent's escape reached the terminal:\n%q", got)
	}
	s.keys("q")
	s.waitFor("> ✓ M README.md")
	// A file without a timeline shows no history line.
	s.keys("Down", "v")
	if got := s.waitFor("A docs/new.txt", "+fresh"); strings.Contains(got, "history:") {
		t.Errorf("an item without provenance shows a history:\n%s", got)
	}
	s.keys("q")
	s.waitFor("> ✓ A docs/new.txt")
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Error("not aborted")
	}
}
