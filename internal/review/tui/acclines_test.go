package tui

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Accessible mode: added and deleted text files show their lines; a hunk is split into its
// lines by a question (what "s" does in the full-screen UI), and a file with one hunk is
// offered for it after the file list (what "h" does there). The decisions carry exactly the
// lines chosen.
func TestTUIAccessibleLines(t *testing.T) {
	t.Parallel()
	deleted := textItem("old/gone.txt", staging.Deleted, "first gone line\nsecond gone line\n", "")
	cs := &review.Changeset{Items: []*review.Item{threeHunks(), oneHunk(), added(), deleted}}
	s := startTUIAt(t, 100, 50, "", cs, "-accessible")
	s.waitFor("Print the changes of every file first? [y/N]")
	s.typeLine("y")
	s.waitFor("--- A docs/new.txt", "+fresh", "+file", "--- D old/gone.txt", "-first gone line", "-second gone line",
		"1. ✓ M src/three.go", "Enter a number between 0 and 4")
	s.typeLine("0")
	s.waitFor("Choose lines within any of these files?", "1.   M README.md  +1 −1", "Enter a number between 0 and 1")
	s.typeLine("1")
	s.waitFor("1. ✓ M README.md")
	s.typeLine("0")
	s.waitFor("Hunk 1 of 1: what should happen?", "-world", "+brave new world")
	s.typeLine("3")
	s.waitFor("Lines of hunk 1 of 1 to accept", "1. ✓ − world", "2. ✓ + brave new world", "0 when done")
	s.typeLine("1") // keep "world": only the new line is added
	s.waitFor("1.   − world")
	s.typeLine("0")
	s.waitFor("[1/4] M src/three.go", "2. choose hunks one by one")
	s.typeLine("2")
	s.waitFor("Hunk 1 of 3: what should happen?", "+changed three")
	s.typeLine("3")
	s.waitFor("Lines of hunk 1 of 3 to accept", "1. ✓ − line 3", "2. ✓ + changed three")
	s.typeLine("2") // remove line 3, add nothing
	s.waitFor("2.   + changed three")
	s.typeLine("0")
	s.waitFor("Hunk 2 of 3: what should happen?")
	s.typeLine("2")
	s.waitFor("Hunk 3 of 3: what should happen?")
	s.typeLine("1")
	scr := s.waitFor("write src/three.go (3 of 6 changed lines)", "write README.md (1 of 2 changed lines)", "Apply these changes? [y/N]")
	_ = scr
	// Plain text for a screen reader: no colour (tmux shows any SGR it was sent).
	if esc := s.screenEsc(); strings.Contains(esc, "\x1b[") {
		t.Errorf("escape sequences in accessible mode:\n%q", esc)
	}
	s.typeLine("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	// Hunk 1 of three.go: " line 1", " line 2", "-line 3", "+changed three", " line 4", ...
	l := make([]bool, len(threeHunks().Hunks[0].Lines))
	l[2] = true
	wantDecisions(t, decs, []review.Decision{
		{Path: "src/three.go", Action: review.Accept, Hunks: []bool{true, false, true}, Lines: [][]bool{l, nil, nil}},
		{Path: "README.md", Action: review.Accept, Lines: [][]bool{{false, false, true}}},
		{Path: "docs/new.txt", Action: review.Accept},
		{Path: "old/gone.txt", Action: review.Accept},
	})
}
