package tui

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/screenshot"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

const fetchOld = `package net

import "time"

// get fetches the page, waiting at most the timeout.
func get(url string) error {
	return fetch(url, timeout)
}

func fetch(url string, d time.Duration) error {
	if d <= 0 {
		return errTimeout
	}
	return nil
}
`

func screensChangeset() *review.Changeset {
	fetchNew := strings.NewReplacer("at most the timeout", "until the deadline", "url, timeout)", "url, deadline)", "d <= 0", "d < 0").Replace(fetchOld)
	return &review.Changeset{Workdir: "/home/me/project", Items: []*review.Item{
		textItem("net/fetch.go", staging.Modified, fetchOld, fetchNew),
		oneHunk(),
		added(),
		binary(),
		conflictItem(),
		textItem("ws.go", staging.Modified, "func f() {\n\treturn\n}\n", "func f() {\n    return\n}\n"),
	}}
}

func screensTreeChangeset() *review.Changeset {
	cs := treeChangeset()
	old := &tree.Entry{Type: tree.File, Mode: 0o644, Size: 6, Hash: tree.Hash([]byte("hello\n"))}
	from := &review.Item{Path: "docs/setup.md", Display: "docs/setup.md", Kind: staging.Deleted, Base: old, Host: old}
	it := textItem("docs/guide/setup.md", staging.Added, "hello\n", "hello\n")
	it.Guest, it.From, it.Moved = old, from, true
	cs.Items = append(cs.Items, it)
	cs.Items[3].Conflict = true // internal/a/y.go
	return cs
}

// TestReviewScreens makes the review's screens of docs/review-screens: tuidemo (the real
// tui.Run) in tmux, saved by internal/testutil/screenshot, which says how to run it (the
// compare's screens are internal/command/reviewcmd's TestReviewScreensCompare).
func TestReviewScreens(t *testing.T) {
	shots := screenshot.New(t, "limactl mcp review: ")
	save := func(s *tmuxSession, name, title string) {
		t.Helper()
		shots.Save(name, title, s.screenEsc())
	}
	quit := func(s *tmuxSession) {
		s.keys("C-c")
		if _, aborted := s.outcome(); !aborted {
			t.Fatal("not aborted")
		}
	}

	// The file list after v on README.md; the unified diff (120 columns); side by side (200).
	s := startTUIAt(t, 120, 40, "", screensChangeset())
	s.waitFor("> ✓ M net/fetch.go")
	s.keys("Down", "v")
	s.waitFor("+brave new world")
	s.keys("q")
	s.waitFor("> ✓ M README.md  +1 −1 · viewed")
	save(s, "list", "list")
	s.keys("Up", "v")
	s.waitFor("+// get fetches the page, waiting until the deadline.")
	save(s, "diff", "diff")
	quit(s)

	s = startTUIAt(t, 200, 50, "", screensChangeset())
	s.waitFor("> ✓ M net/fetch.go")
	s.keys("v")
	s.waitFor("waiting until the deadline.", "│")
	save(s, "side-by-side", "side by side")
	quit(s)

	// The tree, cmd/tool/ folded.
	s = startTUIAt(t, 120, 40, "", screensTreeChangeset())
	s.waitFor("> ✓ M README.md", "t: tree")
	s.keys("t")
	s.waitFor("▾ cmd/tool/  1 file")
	s.keys("Home", "Left")
	s.waitFor("▸ cmd/tool/  1 file")
	save(s, "tree", "tree")
	quit(s)

	// The lines of a hunk (s), one left out.
	s = startTUIAt(t, 120, 40, "", &review.Changeset{Items: []*review.Item{threeHunks()}})
	s.waitFor("M src/three.go")
	s.keys("h")
	s.waitFor("Hunk 1 of 3")
	s.keys("s")
	s.waitFor("> ✓ − line 3")
	s.keys("Space")
	s.waitFor("> • − line 3")
	save(s, "lines", "lines of a hunk")
	quit(s)

	// Accessible mode: plain prompts, the lines of a hunk chosen by number.
	s = startTUIAt(t, 100, 40, "", &review.Changeset{Items: []*review.Item{oneHunk(), added()}}, "-accessible")
	s.waitFor("Print the changes of every file first? [y/N]")
	s.typeLine("n")
	s.waitFor("Enter a number between 0 and 2")
	s.typeLine("0")
	// The answers on the screen saved are typed once their prompt is on it: typed before, the
	// terminal echoes them above the prompt, and the screen differs from run to run.
	s.waitFor("Choose lines within any of these files?", "1.   M README.md  +1 −1\n0.   Confirm selection\nEnter a number between 0 and 1:")
	s.typeLine("1")
	s.waitFor("1. ✓ M README.md  +1 −1\n0.   Confirm selection\nEnter a number between 0 and 1:")
	s.typeLine("0")
	s.waitFor("3. choose its lines one by one\nEnter a number between 1 and 3:")
	s.typeLine("3")
	s.waitFor("2. ✓ + brave new world\n0.   Confirm selection\nEnter a number between 0 and 2:")
	s.typeLine("1")
	s.waitFor("1.   − world\n2. ✓ + brave new world\n0.   Confirm selection\nEnter a number between 0 and 2:")
	save(s, "accessible", "accessible mode")
	quit(s)
}
