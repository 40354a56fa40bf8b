package tui

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

func treeChangeset() *review.Changeset {
	cs := &review.Changeset{}
	for _, p := range []string{"README.md", "cmd/tool/main.go", "internal/a/x.go", "internal/a/y.go", "internal/b/main.go"} {
		cs.Items = append(cs.Items, textItem(p, staging.Modified, "a\n", "b\n"))
	}
	return cs
}

// "t" shows the files as a tree by directory with counts; space on a directory's row leaves
// out (or selects) every file in it; ← folds it, and what is folded keeps its selection; n
// unfolds the directory of the next unviewed file.
func TestTUIFileTree(t *testing.T) {
	t.Parallel()
	s := startTUI(t, treeChangeset())
	s.waitFor("> ✓ M README.md", "t: tree")
	s.keys("t")
	scr := s.waitFor("▾ cmd/tool/  1 file", "▾ internal/  3 files", "▾ a/  2 files", "▾ b/  1 file", "> ✓ M README.md", "t: flat")
	// A file name two files have is shown with its path (huh tells rows apart by label).
	for _, want := range []string{"✓   M cmd/tool/main.go", "✓     M x.go", "✓     M y.go", "✓     M internal/b/main.go"} {
		if !strings.Contains(scr, want) {
			t.Errorf("no %q:\n%s", want, scr)
		}
	}
	s.keys("Home", "Down", "Down")
	s.waitFor("> ✓ ▾ internal/  3 files")
	s.keys("Space")
	s.waitFor("> • ▾ internal/  3 files", "•     M x.go", "•   ▾ a/  2 files")
	s.keys("Down", "Down", "Space")
	s.waitFor("> ✓     M x.go", "• ▾ internal/  3 files · 1 selected")
	s.keys("Up", "Up", "Left")
	scr = s.waitFor("> • ▸ internal/  3 files · 1 selected")
	if strings.Contains(scr, "y.go") {
		t.Fatalf("a folded directory shows its files:\n%s", scr)
	}
	// n: the next unviewed file is in the folded directory: it unfolds.
	s.keys("n")
	s.waitFor("> ✓     M x.go", "▾ internal/  3 files · 1 selected")
	s.keys("Left")
	s.waitFor("> •   ▸ a/  2 files · 1 selected")
	s.keys("Enter")
	s.waitFor("Also revert these rejected files in the guest?", "internal/a/y.go", "internal/b/main.go")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "left pending in the guest (2)")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "README.md", Action: review.Accept},
		{Path: "cmd/tool/main.go", Action: review.Accept},
		{Path: "internal/a/x.go", Action: review.Accept},
		{Path: "internal/a/y.go", Action: review.Reject},
		{Path: "internal/b/main.go", Action: review.Reject},
	})
}
