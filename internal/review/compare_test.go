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
	return pickedText(t, c, Pick{Path: "f.txt", Hunks: hunks})
}

// pickedText merges a pick of f.txt and returns the content Apply would write.
func pickedText(t *testing.T, c *Compared, p Pick) (string, error) {
	t.Helper()
	cs, ds, err := c.Merge([]Pick{p})
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

// marks chooses the lines of hunk h of session i's change whose sign and text are in take
// ("-le", "+P"): one mark per line of the hunk, as the review's line choice gives them.
func marks(t *testing.T, c *Compared, i, h int, take ...string) []bool {
	t.Helper()
	hunk := c.Paths[0].Items[i].Hunks[h]
	out := make([]bool, len(hunk.Lines))
	found := 0
	for j, l := range hunk.Lines {
		sign := map[udiff.Op]string{udiff.Insert: "+", udiff.Delete: "-"}[l.Op]
		for _, s := range take {
			if sign != "" && s == sign+strings.TrimSuffix(l.Text, "\n") {
				out[j] = true
				found++
			}
		}
	}
	if found != len(take) {
		t.Fatalf("session %d hunk %d: %d of %q found in %+v", i, h, found, take, hunk.Lines)
	}
	return out
}

// Lines chosen within a session's hunk, as the review chooses them (a chosen + line written,
// a chosen − line removed, the others left), merged with other sessions' hunks or lines
// against the one baseline: the result is exactly the chosen lines; two sessions' chosen
// lines that change the same base lines are refused.
func TestMergeLines(t *testing.T) {
	base := numbered(20, nil)
	// p replaces le, lf by P5, P6; q replaces le, lf by Q, R and lr by S.
	p := numbered(20, map[int]string{5: "P5\nP6\n", 6: ""})
	q := numbered(20, map[int]string{5: "Q\n", 6: "R\n", 18: "S\n"})
	for _, tc := range []struct {
		name string
		pick func(c *Compared) Pick
		want string // "error: ..." for a refusal
		from string // Source's answer
	}{
		{"lines of one, a hunk of another", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{{true}, {false, true}}, Lines: [][][]bool{{marks(t, c, 0, 0, "-le", "+P5")}, nil}}
		}, numbered(20, map[int]string{5: "", 6: "lf\nP5\n", 18: "S\n"}), "p and q"},
		// p's P5 is added where p's hunk ends (after lf): q's R, replacing lf, comes first.
		{"lines apart of two overlapping hunks", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{{true}, {true, false}}, Lines: [][][]bool{{marks(t, c, 0, 0, "-le", "+P5")}, {marks(t, c, 1, 0, "-lf", "+R"), nil}}}
		}, numbered(20, map[int]string{5: "", 6: "R\nP5\n"}), "p and q"},
		// Both remove le (the same change, taken once) and add after lf.
		{"lines that change the same line", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{{true}, {true, false}}, Lines: [][][]bool{{marks(t, c, 0, 0, "-le", "+P5")}, {marks(t, c, 1, 0, "-le", "+Q"), nil}}}
		}, "error: the lines chosen of hunk 1 of p and the lines chosen of hunk 1 of q change the same lines (at line 7 of the baseline): take one of them", ""},
		{"lines and a whole hunk that change the same line", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{{true}, {true, false}}, Lines: [][][]bool{nil, {marks(t, c, 1, 0, "-lf", "+R"), nil}}}
		}, "error: hunk 1 of p and the lines chosen of hunk 1 of q change the same lines (at line 6 of the baseline)", ""},
		{"one session's lines only: its own partial accept", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{{true}, {false, false}}, Lines: [][][]bool{{marks(t, c, 0, 0, "+P6")}, nil}}
		}, numbered(20, map[int]string{6: "lf\nP6\n"}), "p"},
		{"no line chosen takes nothing of the session", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{{true}, {false, true}}, Lines: [][][]bool{{marks(t, c, 0, 0)}, nil}}
		}, numbered(20, map[int]string{18: "S\n"}), "q"},
		{"all lines chosen is the hunk", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{{true}, {false, true}}, Lines: [][][]bool{{marks(t, c, 0, 0, "-le", "-lf", "+P5", "+P6")}, nil}}
		}, numbered(20, map[int]string{5: "P5\nP6\n", 6: "", 18: "S\n"}), "p and q"},
		{"line choices of the wrong shape", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{{true}, {false, true}}, Lines: [][][]bool{{{true}}, nil}}
		}, "error: session p: f.txt: hunk 1: 1 line choices for 10 lines", ""},
		{"line choices for too few sessions", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{{true}, {false, true}}, Lines: [][][]bool{nil}}
		}, "error: line choices for 1 sessions, there are 2", ""},
		{"lines without hunks", func(c *Compared) Pick {
			return Pick{Hunks: [][]bool{nil, {false, true}}, Lines: [][][]bool{{marks(t, c, 0, 0, "+P6")}, nil}}
		}, "error: lines of session p chosen without its hunks", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := compared(base, p, q)
			pick := tc.pick(c)
			pick.Path = "f.txt"
			got, err := pickedText(t, c, pick)
			if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err %v, want %q (merged %q)", err, want, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("merged %q, %v\nwant %q", got, err, tc.want)
			}
			if s := c.Source(pick); s != tc.from {
				t.Errorf("from %q, want %q", s, tc.from)
			}
		})
	}
}
