package review

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// textItem is a session's edit of a text file from base to now, as Build describes it.
func textItem(path, base, now string) *Item {
	d := udiff.Diff(base, now)
	return &Item{Path: path, Display: path, Kind: staging.Modified, Text: true,
		Base:     &tree.Entry{Path: tree.Name(path), Type: tree.File, Mode: 0o644, Hash: tree.Hash([]byte(base)), Size: int64(len(base))},
		Guest:    &tree.Entry{Path: tree.Name(path), Type: tree.File, Mode: 0o644, Hash: tree.Hash([]byte(now)), Size: int64(len(now))},
		Host:     &tree.Entry{Path: tree.Name(path), Type: tree.File, Mode: 0o644, Hash: tree.Hash([]byte(base)), Size: int64(len(base))},
		BaseText: base, GuestText: now, Hunks: d.Hunks}
}

// compared is a compare of one path edited by each session (now[i]; "" leaves it).
func compared(base string, now ...string) *Compared {
	c := &Compared{Workdir: "/w"}
	cp := &ComparedPath{Path: "f.txt", Display: "f.txt", Items: make([]*Item, len(now))}
	for i, n := range now {
		c.Names = append(c.Names, string(rune('p'+i)))
		c.sessions = append(c.sessions, &staging.Session{}) // only told apart, never used
		c.Sets = append(c.Sets, &Changeset{Workdir: "/w"})
		if n != "" {
			cp.Items[i] = textItem("f.txt", base, n)
		}
	}
	c.Paths = []*ComparedPath{cp}
	return c
}

func numbered(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s)
			continue
		}
		b.WriteString("l" + string(rune('a'+i-1)) + "\n")
	}
	return b.String()
}

// mergedText merges the hunks of the sessions and returns the content Apply would write.
func mergedText(t *testing.T, c *Compared, hunks [][]bool) (string, error) {
	t.Helper()
	cs, ds, err := c.Merge([]Pick{{Path: "f.txt", Hunks: hunks}})
	if err != nil {
		return "", err
	}
	if len(cs.Items) == 0 {
		return "<none>", nil
	}
	steps, _, err := plan(cs, ds)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].content == nil {
		t.Fatalf("steps %+v", steps)
	}
	if steps[0].after.Hash != tree.Hash(steps[0].content) {
		t.Error("the merge's hash is not its content's")
	}
	// A merge, or another session's hunks, leave the baseline (the first session's own hunks
	// move it, as a review of it does).
	if it := cs.Items[0]; it.keepBase != (it.src != nil) {
		t.Errorf("keepBase %v, read from %p", it.keepBase, it.src)
	}
	if cs.Items[0].keepBase && !sameEntry(steps[0].baseNext, cs.Items[0].Base) {
		t.Error("a merge moved the baseline")
	}
	return string(steps[0].content), nil
}

func TestMergeHunks(t *testing.T) {
	base := numbered(20, nil)
	for _, tc := range []struct {
		name  string
		now   []string
		hunks [][]bool
		want  string // "error: ..." for a refusal
	}{
		{"two sessions, apart", []string{numbered(20, map[int]string{2: "P\n"}), numbered(20, map[int]string{18: "Q\n"})},
			[][]bool{{true}, {true}}, numbered(20, map[int]string{2: "P\n", 18: "Q\n"})},
		// Their context lines overlap (3 lines apart), their changes do not.
		{"two sessions, close", []string{numbered(20, map[int]string{5: "P\n"}), numbered(20, map[int]string{8: "Q\n"})},
			[][]bool{{true}, {true}}, numbered(20, map[int]string{5: "P\n", 8: "Q\n"})},
		{"the same line", []string{numbered(20, map[int]string{5: "P\n"}), numbered(20, map[int]string{5: "Q\n"})},
			[][]bool{{true}, {true}}, "error: hunk 1 of p and hunk 1 of q change the same lines"},
		{"the same change twice is once", []string{numbered(20, map[int]string{5: "P\n"}), numbered(20, map[int]string{5: "P\n", 15: "Q\n"})},
			[][]bool{{true}, {true, true}}, numbered(20, map[int]string{5: "P\n", 15: "Q\n"})},
		{"insertions at one place", []string{numbered(20, map[int]string{5: "le\nP\n"}), numbered(20, map[int]string{5: "le\nQ\n"})},
			[][]bool{{true}, {true}}, "error: change the same lines"},
		{"an insertion next to a removal", []string{numbered(20, map[int]string{5: "le\nP\n"}), numbered(20, map[int]string{6: ""})},
			[][]bool{{true}, {true}}, numbered(20, map[int]string{5: "le\nP\n", 6: ""})},
		{"one session only, partly", []string{numbered(20, map[int]string{2: "P\n", 18: "P\n"}), numbered(20, map[int]string{10: "Q\n"})},
			[][]bool{{false, true}, nil}, numbered(20, map[int]string{18: "P\n"})},
		{"nothing taken", []string{numbered(20, map[int]string{2: "P\n"}), numbered(20, map[int]string{18: "Q\n"})},
			[][]bool{{false}, {false}}, "<none>"},
		{"three sessions", []string{numbered(20, map[int]string{1: "P\n"}), numbered(20, map[int]string{10: "Q\n"}), numbered(20, map[int]string{20: "R\n"})},
			[][]bool{{true}, {true}, {true}}, numbered(20, map[int]string{1: "P\n", 10: "Q\n", 20: "R\n"})},
		{"wrong shape", []string{numbered(20, map[int]string{2: "P\n"}), numbered(20, map[int]string{18: "Q\n"})},
			[][]bool{{true, true}, {true}}, "error: 2 hunk choices for session p's 1 hunks"},
		{"a session that left it", []string{numbered(20, map[int]string{2: "P\n"}), numbered(20, map[int]string{18: "Q\n"}), ""},
			[][]bool{{true}, {true}, {}}, "error: session r did not change it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergedText(t, compared(base, tc.now...), tc.hunks)
			if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err %v, want %q (merged %q)", err, want, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("merged %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}

// A last line without a newline: a session that adds after it replaces it, and merges with
// another session's edit elsewhere.
func TestMergeHunksNoNewline(t *testing.T) {
	base := "a\nb\nc\nd\ne\nf\ng\nh\ni"
	c := compared(base, "A\nb\nc\nd\ne\nf\ng\nh\ni", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n")
	got, err := mergedText(t, c, [][]bool{{true}, {true}})
	if err != nil || got != "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\n" {
		t.Errorf("merged %q, %v", got, err)
	}
}

// Picks that write one host path twice, or a version refused in its session, are refused.
func TestMergeRefuses(t *testing.T) {
	c := compared("x\n", "y\n", "z\n")
	if _, _, err := c.Merge([]Pick{{Path: "f.txt", Session: 0}, {Path: "f.txt", Session: 1}}); err == nil || !strings.Contains(err.Error(), "picked twice") {
		t.Errorf("a path picked twice: %v", err)
	}
	// A rename in one session writes its old name, which another pick writes too.
	ren := textItem("g.txt", "x\n", "y\n")
	ren.From = &Item{Path: "f.txt", Display: "f.txt", Base: ren.Base, Host: ren.Host}
	c.Paths = append(c.Paths, &ComparedPath{Path: "g.txt", Display: "g.txt", Items: []*Item{nil, ren}})
	if _, _, err := c.Merge([]Pick{{Path: "f.txt", Session: 0}, {Path: "g.txt", Session: 1}}); err == nil || !strings.Contains(err.Error(), "both write f.txt") {
		t.Errorf("a rename's old name picked too: %v", err)
	}
	c = compared("x\n", "y\n", "z\n")
	c.Paths[0].Items[1].Refused = "unsafe"
	if _, _, err := c.Merge([]Pick{{Path: "f.txt", Session: 1}}); err == nil || !strings.Contains(err.Error(), "not applied: unsafe") {
		t.Errorf("a refused version: %v", err)
	}
	// A version of another session reads from it and keeps the baseline; the first
	// session's own moves it.
	c = compared("x\n", "y\n", "z\n")
	for i, wantKeep := range []bool{false, true} {
		cs, _, err := c.Merge([]Pick{{Path: "f.txt", Session: i}})
		if err != nil {
			t.Fatal(err)
		}
		wantSrc := c.sessions[i]
		if i == 0 {
			wantSrc = nil // the session applied through reads its own
		}
		if it := cs.Items[0]; it.keepBase != wantKeep || it.src != wantSrc {
			t.Errorf("session %d: keepBase %v, src %p", i, it.keepBase, it.src)
		}
	}
}
