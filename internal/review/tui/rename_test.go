package tui

import (
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// A rename the agent made is one row ("R old → new"), and the confirmation says it is a
// rename (review.Plan).
func TestTUIRename(t *testing.T) {
	t.Parallel()
	old := &tree.Entry{Type: tree.File, Mode: 0o644, Size: 6, Hash: tree.Hash([]byte("hello\n"))}
	from := &review.Item{Path: "docs/old.md", Display: "docs/old.md", Kind: staging.Deleted, Base: old, Host: old}
	it := textItem("docs/guide/new.md", staging.Added, "hello\n", "hello\n")
	it.Guest, it.From, it.Moved = old, from, true
	s := startTUI(t, &review.Changeset{Items: []*review.Item{it, oneHunk()}})
	s.waitFor("> ✓ R docs/old.md → docs/guide/new.md  (same content)", "M README.md")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "rename docs/old.md → docs/guide/new.md", "write README.md")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "docs/guide/new.md", Action: review.Accept},
		{Path: "README.md", Action: review.Accept},
	})
}
