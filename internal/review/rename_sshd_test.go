package review_test

import (
	"context"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
)

// A file the agent moved (same content) is one item, a rename, applied as one change: the old
// name goes and the new one comes, and undo puts it back.
func TestRenameIdenticalContentApplied(t *testing.T) {
	f := newFx(t)
	f.guest("mkdir -p moved && mv gone.txt moved/kept.txt")
	cs := f.build()
	if len(cs.Items) != 2 || cs.Items[0].Path != "moved" {
		t.Fatalf("items: want the new directory and the rename, got %v", names(cs))
	}
	it := cs.Items[1]
	if it.Path != "moved/kept.txt" || it.From == nil || it.From.Path != "gone.txt" || !it.Moved || it.Conflict {
		t.Fatalf("the rename: %+v", it)
	}
	if it.Description != "renamed from gone.txt" || len(it.Hunks) != 0 {
		t.Errorf("description %q, %d hunks", it.Description, len(it.Hunks))
	}
	if p := review.Patch(cs); !strings.Contains(p, "rename from gone.txt\nrename to moved/kept.txt\n") {
		t.Errorf("patch:\n%s", p)
	}
	planned, err := review.Plan(cs, acceptAll(cs))
	must(t, err)
	if len(planned) != 2 || planned[1].Sentence != "rename gone.txt → moved/kept.txt" {
		t.Errorf("plan: %+v", planned)
	}
	rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if exists(f, "gone.txt") || f.read("moved/kept.txt") != "to be deleted\n" {
		t.Fatalf("after the apply: gone.txt %v, moved/kept.txt %q (report %+v)", exists(f, "gone.txt"), f.read("moved/kept.txt"), rep)
	}
	if cs := f.build(); len(cs.Items) != 0 {
		t.Errorf("still pending after the apply: %v", names(cs))
	}
	_, err = review.Undo(context.Background(), f.sess)
	must(t, err)
	if f.read("gone.txt") != "to be deleted\n" || exists(f, "moved") {
		t.Errorf("after undo: gone.txt %q, moved %v", f.read("gone.txt"), exists(f, "moved"))
	}
}

// A file moved and edited (git's similarity rule: at least half in common) is a rename with
// its diff, from the old name's version; hunks are chosen as for any edit.
func TestRenameSimilarContentWithHunks(t *testing.T) {
	f := newFx(t)
	f.guest("mv long.txt longer.txt && sed -i -e 's/^line 3$/line three/' -e 's/^line 50$/line fifty/' longer.txt")
	cs := f.build()
	it := item(cs, "longer.txt")
	if len(cs.Items) != 1 || it == nil || it.From == nil || it.From.Path != "long.txt" || !it.Moved {
		t.Fatalf("items %v, longer.txt %+v", names(cs), it)
	}
	if !it.Text || len(it.Hunks) != 2 || it.Added != 2 || it.Removed != 2 || !strings.Contains(it.Description, "renamed from long.txt, content changed") {
		t.Fatalf("the rename's diff: text %v, %d hunks, +%d -%d, %q", it.Text, len(it.Hunks), it.Added, it.Removed, it.Description)
	}
	d := review.Decision{Path: "longer.txt", Action: review.Accept, Hunks: []bool{true, false}}
	planned, err := review.Plan(cs, []review.Decision{d})
	must(t, err)
	if len(planned) != 1 || planned[0].Sentence != "rename long.txt → longer.txt and write it (1 of 2 hunks)" {
		t.Errorf("plan: %+v", planned)
	}
	_, err = review.Apply(context.Background(), f.sess, cs, []review.Decision{d})
	must(t, err)
	if exists(f, "long.txt") || f.read("longer.txt") != lines(60, map[int]string{3: "line three\n"}) {
		t.Fatalf("after the apply: long.txt %v, longer.txt %q", exists(f, "long.txt"), f.read("longer.txt"))
	}
	// The other hunk stays pending, as an edit of the new name.
	cs = f.build()
	if it := item(cs, "longer.txt"); len(cs.Items) != 1 || it == nil || it.From != nil || len(it.Hunks) != 1 {
		t.Errorf("pending after the apply: %v", names(cs))
	}
}

// A rename is never applied over a host edit: when the host changes the old name or creates
// the new one between the review and the apply, neither half is applied.
func TestRenameNeverOverAHostEdit(t *testing.T) {
	f := newFx(t)
	f.guest("mv gone.txt moved.txt && mv main.go cmd.go")
	cs := f.build()
	if len(cs.Items) != 2 || item(cs, "moved.txt").From == nil || item(cs, "cmd.go").From == nil {
		t.Fatalf("items: %v", names(cs))
	}
	f.write("gone.txt", "the person's edit\n", 0o644)
	f.write("cmd.go", "the person's new file\n", 0o644)
	rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if f.read("gone.txt") != "the person's edit\n" || exists(f, "moved.txt") {
		t.Errorf("gone.txt %q, moved.txt %v", f.read("gone.txt"), exists(f, "moved.txt"))
	}
	if f.read("cmd.go") != "the person's new file\n" || !exists(f, "main.go") {
		t.Errorf("cmd.go %q, main.go %v", f.read("cmd.go"), exists(f, "main.go"))
	}
	if len(rep.Written) != 0 || len(rep.Refused) < 2 {
		t.Errorf("report: %+v", rep)
	}
	// Seen at review time, the host's edit of the old name makes it a deletion (a conflict)
	// and an addition again: no rename over it.
	cs = f.build()
	if it := item(cs, "moved.txt"); it == nil || it.From != nil {
		t.Errorf("moved.txt after a host edit of gone.txt: %+v", it)
	}
	if it := item(cs, "gone.txt"); it == nil || !it.Conflict {
		t.Errorf("gone.txt after the host's edit: %+v", it)
	}
}

// A rename into .git or out of the working directory is not one: the new name is refused as
// any other, and the old name's deletion stays an item of its own.
func TestRenameIntoGitRefused(t *testing.T) {
	f := newFx(t)
	f.guest("mkdir -p .git && mv gone.txt .git/hooks-pre-commit")
	cs := f.build()
	if it := item(cs, "gone.txt"); it == nil || it.From != nil || it.Guest != nil {
		t.Fatalf("gone.txt: %+v (items %v)", it, names(cs))
	}
	for _, it := range append(append([]*review.Item{}, cs.Items...), cs.Ignored...) {
		if it.From != nil {
			t.Errorf("a rename was made of %s → %s", it.From.Path, it.Path)
		}
	}
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if exists(f, ".git/hooks-pre-commit") {
		t.Error("written into .git")
	}
}

func names(cs *review.Changeset) []string {
	var out []string
	for _, it := range cs.Items {
		s := it.Path
		if it.From != nil {
			s = it.From.Path + "→" + s
		}
		out = append(out, s)
	}
	return out
}
