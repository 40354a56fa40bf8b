package tui

import (
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
)

// "s" on a hunk splits it into its changed lines; the ones left out stay pending, and the
// confirmation counts lines.
func TestTUIChooseLinesOfAHunk(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{threeHunks()}})
	s.waitFor("M src/three.go  +3 −3 (3 hunks)")
	s.keys("Enter")
	s.waitFor("What should happen to this file?")
	s.keys("Down")
	s.waitFor("> choose hunks one by one")
	s.keys("Enter")
	s.waitFor("Hunk 1 of 3", "s: split into lines", "Accept hunk 1 of 3?")
	s.keys("s")
	s.waitFor("Lines of hunk 1 of 3 to accept", "> ✓ − line 3", "✓ + changed three")
	s.keys("Space")
	s.waitFor("> • − line 3")
	s.keys("Enter")
	s.waitFor("Hunk 2 of 3", "+changed twenty")
	s.keys("n")
	s.waitFor("Hunk 3 of 3", "+changed thirty-seven")
	s.keys("y")
	s.waitFor("Apply these changes?", "write src/three.go (3 of 6 changed lines)")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	// Hunk 1: " line 1", " line 2", "-line 3", "+changed three", " line 4", ...
	l := make([]bool, len(threeHunks().Hunks[0].Lines))
	l[3] = true
	wantDecisions(t, decs, []review.Decision{
		{Path: "src/three.go", Action: review.Accept, Hunks: []bool{true, false, true}, Lines: [][]bool{l, nil, nil}},
	})
}

// "h" in the file list chooses the hunks and lines of the file under the cursor, also of a
// file with one hunk (which has no step of its own); the list says what was chosen.
func TestTUIHunksFromTheList(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{oneHunk(), added()}})
	s.waitFor("> ✓ M README.md  +1 −1", "h: hunks, lines")
	s.keys("h")
	s.waitFor("Hunk 1 of 1", "-world", "+brave new world")
	s.keys("s")
	s.waitFor("Lines of hunk 1 of 1 to accept", "> ✓ − world", "✓ + brave new world")
	s.keys("Down", "Space")
	s.waitFor("> • + brave new world")
	s.keys("Enter")
	s.waitFor("M README.md  +1 −1 · 1 of 2 changed lines · viewed")
	// "h" on an added file does nothing (it is taken or left whole).
	s.keys("Down", "h")
	s.waitFor("> ✓ A docs/new.txt")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "write README.md (1 of 2 changed lines)", "create docs/new.txt")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "README.md", Action: review.Accept, Lines: [][]bool{{false, true, false}}},
		{Path: "docs/new.txt", Action: review.Accept},
	})
}

// Rejecting every hunk from the list leaves the file out (unselected).
func TestTUIHunksFromTheListRejected(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{oneHunk(), added()}})
	s.waitFor("> ✓ M README.md  +1 −1")
	s.keys("h")
	s.waitFor("Accept hunk 1 of 1?")
	s.keys("n")
	s.waitFor("> • M README.md  +1 −1")
	s.keys("Enter")
	s.waitFor("Also revert these rejected files in the guest?")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "left pending in the guest (1): README.md")
	s.keys("y")
	decs, _ := s.outcome()
	wantDecisions(t, decs, []review.Decision{
		{Path: "README.md", Action: review.Reject},
		{Path: "docs/new.txt", Action: review.Accept},
	})
}
