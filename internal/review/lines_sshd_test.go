package review_test

import (
	"context"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Lines chosen within a hunk are exactly what reaches the host: a chosen added line is
// written, a chosen removed line removed, the others kept; the rest stays pending in the
// guest, and is applied by the next review.
func TestAcceptSomeLines(t *testing.T) {
	f := newFx(t)
	// One hunk: lines 10-12 replaced by three new ones, and a line added after 13.
	edited := lines(60, map[int]string{10: "ten\n", 11: "eleven\n", 12: "twelve\n", 13: "line 13\nthirteen and a half\n"})
	f.guest("cat > long.txt <<'EOF'\n" + edited + "EOF")
	cs := f.build()
	it := item(cs, "long.txt")
	if it == nil || !it.Text || len(it.Hunks) != 1 {
		t.Fatalf("long.txt: %+v", it)
	}
	h := it.Hunks[0]
	// Take the removal of line 10 and the addition of "ten", and "thirteen and a half"; leave
	// the rest.
	choose := make([]bool, len(h.Lines))
	var changed []string
	for j, l := range h.Lines {
		if l.Op == udiff.Equal {
			continue
		}
		changed = append(changed, string(l.Op)+strings.TrimSuffix(l.Text, "\n"))
		switch string(l.Op) + l.Text {
		case "-line 10\n", "+ten\n", "+thirteen and a half\n":
			choose[j] = true
		}
	}
	if len(changed) != 7 {
		t.Fatalf("changed lines of the hunk: %q", changed)
	}
	d := review.Decision{Path: "long.txt", Action: review.Accept, Lines: [][]bool{choose}}
	planned, err := review.Plan(cs, []review.Decision{d})
	must(t, err)
	if len(planned) != 1 || planned[0].Sentence != "write long.txt (3 of 7 changed lines)" || planned[0].What != "write (3 of 7 changed lines)" {
		t.Errorf("plan: %+v", planned)
	}
	_, err = review.Apply(context.Background(), f.sess, cs, []review.Decision{d})
	must(t, err)
	// As git applies it (and lazygit stages it): the removals not chosen stay, as context,
	// and "ten" comes after them.
	want := lines(60, map[int]string{10: "", 12: "line 12\nten\n", 13: "line 13\nthirteen and a half\n"})
	if got := f.read("long.txt"); got != want {
		t.Fatalf("host:\n%s\nwant:\n%s", got, want)
	}
	// What was left is pending: lines 11 and 12 replaced.
	cs = f.build()
	it = item(cs, "long.txt")
	if it == nil || len(it.Hunks) != 1 || it.Added != 2 || it.Removed != 2 {
		t.Fatalf("pending: %+v", it)
	}
	_, err = review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if got := f.read("long.txt"); got != edited {
		t.Errorf("host after the rest: %q", got)
	}
}

// Choices that do not fit the item are errors, never a silent write of something else.
func TestLineChoicesThatDoNotFit(t *testing.T) {
	f := newFx(t)
	f.guest("printf 'x\\n' >> long.txt && printf 'new\\n' > new.txt")
	cs := f.build()
	for _, d := range []review.Decision{
		{Path: "long.txt", Action: review.Accept, Lines: [][]bool{{true}}},   // one choice for a hunk of 4 lines
		{Path: "long.txt", Action: review.Accept, Lines: [][]bool{nil, nil}}, // two hunks' choices for one
		{Path: "long.txt", Action: review.Accept, Hunks: []bool{true, true}}, // two hunk choices for one
		{Path: "new.txt", Action: review.Accept, Lines: [][]bool{{true}}},    // an added file is not chosen line by line
		{Path: "new.txt", Action: review.Accept, Hunks: []bool{true}},        // nor hunk by hunk
	} {
		if _, err := review.Plan(cs, []review.Decision{d}); err == nil {
			t.Errorf("planned: %+v", d)
		}
		if _, err := review.Apply(context.Background(), f.sess, cs, []review.Decision{d}); err == nil {
			t.Errorf("applied: %+v", d)
		}
	}
	if got := f.read("long.txt"); got != lines(60, nil) || exists(f, "new.txt") {
		t.Errorf("the host changed: long.txt %q, new.txt %v", got, exists(f, "new.txt"))
	}
}

// The last line without a newline: its removal left while a line added after it is taken
// would join two lines; refused with a clear error.
func TestLineChoiceNoNewlineAtEnd(t *testing.T) {
	f := newFx(t)
	f.guest("printf 'a\\nb' > tail.txt")
	cs := f.build()
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	f.guest("printf 'a\\nb\\nc\\n' > tail.txt")
	cs = f.build()
	it := item(cs, "tail.txt")
	if it == nil || !it.Text || len(it.Hunks) != 1 {
		t.Fatalf("tail.txt: %+v", it)
	}
	choose := make([]bool, len(it.Hunks[0].Lines))
	for j, l := range it.Hunks[0].Lines {
		choose[j] = l.Op == udiff.Insert // the additions, not the removal of "b" (no newline)
	}
	_, err = review.Plan(cs, []review.Decision{{Path: "tail.txt", Action: review.Accept, Lines: [][]bool{choose}}})
	if err == nil || !strings.Contains(err.Error(), "no newline") {
		t.Errorf("plan: %v", err)
	}
}
