package udiff

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func numbered(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i))
	}
	return b.String()
}

func TestApplyAllNoneAndEach(t *testing.T) {
	old := numbered(40, func(i int) string { return fmt.Sprintf("line %d\n", i) })
	new := numbered(40, func(i int) string {
		switch i {
		case 2:
			return "line 2 changed\n"
		case 20:
			return "inserted\nline 20\n"
		case 39:
			return ""
		}
		return fmt.Sprintf("line %d\n", i)
	}) + "tail without newline"
	hunks := Hunks(old, new)
	if len(hunks) != 3 {
		t.Fatalf("%d hunks: %v", len(hunks), hunks)
	}
	if got := Apply(old, hunks, func(int) bool { return true }); got != new {
		t.Errorf("all hunks:\n%q\nwant\n%q", got, new)
	}
	if got := Apply(old, hunks, func(int) bool { return false }); got != old {
		t.Errorf("no hunks: %q", got)
	}
	got := Apply(old, hunks, func(i int) bool { return i == 1 })
	if !strings.Contains(got, "inserted\nline 20\n") || strings.Contains(got, "changed") || !strings.Contains(got, "line 39\n") {
		t.Errorf("only the middle hunk: %q", got)
	}
}

// git apply accepts what Unified writes.
func TestUnifiedAppliesWithGit(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, old, new string }{
		{"edit.txt", "a\nb\nc\nd\ne\nf\ng\nh\n", "a\nB\nc\nd\ne\nf\ng\nH\nextra\n"},
		{"nonl.txt", "x\ny", "x\nz"},
		{"empty.txt", "", "now\n"},
	}
	var patch strings.Builder
	for _, c := range cases {
		if err := os.WriteFile(filepath.Join(dir, c.name), []byte(c.old), 0o644); err != nil {
			t.Fatal(err)
		}
		o, n := c.old, c.new
		patch.WriteString("diff --git a/" + c.name + " b/" + c.name + "\n" + Unified(c.name, c.name, &o, &n))
	}
	n := "brand new\n"
	patch.WriteString("diff --git a/added.txt b/added.txt\nnew file mode 100644\n" + Unified("added.txt", "added.txt", nil, &n))
	if err := os.WriteFile(filepath.Join(dir, "p.diff"), []byte(patch.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", dir, "apply", "--unsafe-paths", "p.diff").CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\n%s", err, out, patch.String())
	}
	for _, c := range append(cases, struct{ name, old, new string }{"added.txt", "", n}) {
		got, _ := os.ReadFile(filepath.Join(dir, c.name))
		if string(got) != c.new {
			t.Errorf("%s: %q want %q", c.name, got, c.new)
		}
	}
}

func BenchmarkHunks10kLines(b *testing.B) {
	old := numbered(10000, func(i int) string { return fmt.Sprintf("line %d of a long file\n", i) })
	new := numbered(10000, func(i int) string {
		if i%500 == 0 {
			return fmt.Sprintf("changed %d\n", i)
		}
		return fmt.Sprintf("line %d of a long file\n", i)
	})
	for b.Loop() {
		hs := Hunks(old, new)
		for _, h := range hs {
			_ = h.Render()
		}
	}
}

func distinctLines(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	return b.String()
}

// go-diff's own line encoding panicked (index out of range) from 55,296 distinct lines on:
// a large package-lock.json. The diff stays a real line diff there.
func TestManyDistinctLines(t *testing.T) {
	old := distinctLines("line", 60000)
	new := strings.Replace(old, "line 30000\n", "changed\n", 1) + "added\n"
	r := Diff(old, new)
	if r.WholeFile != "" || len(r.Hunks) != 2 {
		t.Fatalf("want 2 hunks of a line diff, got %d (%q)", len(r.Hunks), r.WholeFile)
	}
	if got := Apply(old, r.Hunks, func(int) bool { return true }); got != new {
		t.Fatal("apply all != new")
	}
}

// Two unrelated texts of 40k lines each took time quadratic in lines (~8 s): the diff stops at
// Budget and says it is a whole-file replacement; either way it is correct.
func TestUnrelatedLargeTexts(t *testing.T) {
	old, new := distinctLines("old", 40000), distinctLines("new", 40000)
	// Interleave shared lines so that no shortcut (common prefix, one text inside the other)
	// applies.
	old = strings.ReplaceAll(old, "old 1", "shared 1")
	new = strings.ReplaceAll(new, "new 1", "shared 1")
	start := time.Now()
	r := Diff(old, new)
	took := time.Since(start)
	t.Logf("40k × 40k unrelated lines: %s, whole file: %q, %d hunks", took, r.WholeFile, len(r.Hunks))
	// A hang guard, not a benchmark: the budget plus generous slack for a slow machine.
	if bound := Budget + 28*time.Second; took > bound {
		t.Errorf("took %s, more than %s: the time budget does not hold", took, bound)
	}
	if r.WholeFile == "" || len(r.Hunks) != 1 {
		t.Errorf("no whole-file fallback (WholeFile %q, %d hunks): the line diff of unrelated texts ran to the end", r.WholeFile, len(r.Hunks))
	}
	if got := Apply(old, r.Hunks, func(int) bool { return true }); got != new {
		t.Fatal("apply all != new")
	}
	if got := Apply(old, r.Hunks, func(int) bool { return false }); got != old {
		t.Fatal("apply none != old")
	}
}

// A seeded generator of text pairs: whatever the lines (repeats, CRLF, no final newline,
// empty), hunks never panic and apply back exactly.
func TestGeneratedPairsApplyBack(t *testing.T) {
	pools := [][]string{
		{"a\n", "b\n", "c\n", "\n", "a\r\n", "}\n", "  x\n"},
		{"same\n"},
	}
	for seed := int64(1); seed <= 500; seed++ {
		r := rand.New(rand.NewSource(seed))
		gen := func() string {
			var b strings.Builder
			pool := pools[r.Intn(len(pools))]
			for range r.Intn(60) {
				if r.Intn(8) == 0 {
					fmt.Fprintf(&b, "u%d\n", r.Intn(1000))
				} else {
					b.WriteString(pool[r.Intn(len(pool))])
				}
			}
			s := b.String()
			if r.Intn(4) == 0 && len(s) > 0 {
				s = s[:len(s)-1] // no final newline
			}
			return s
		}
		old, new := gen(), gen()
		checkPair(t, seed, old, new)
	}
}

func checkPair(t *testing.T, seed int64, old, new string) {
	t.Helper()
	hs := Hunks(old, new)
	if got := Apply(old, hs, func(int) bool { return true }); got != new {
		t.Fatalf("seed %d: apply all:\nold %q\nnew %q\ngot %q", seed, old, new, got)
	}
	if got := Apply(old, hs, func(int) bool { return false }); got != old {
		t.Fatalf("seed %d: apply none:\nold %q\ngot %q", seed, old, got)
	}
}

func FuzzHunksApplyBack(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nx\nc\n")
	f.Add("", "x")
	f.Add("a\r\nb", "b\r\na\n")
	f.Fuzz(func(t *testing.T, old, new string) { checkPair(t, 0, old, new) })
}

func BenchmarkHunks10kEdit(b *testing.B) {
	old := distinctLines("line", 10000)
	new := strings.Replace(strings.Replace(old, "line 100\n", "x\n", 1), "line 9000\n", "y\n", 1)
	for b.Loop() {
		Hunks(old, new)
	}
}

func BenchmarkHunks40kUnrelated(b *testing.B) {
	old, new := distinctLines("old", 40000), distinctLines("new", 40000)
	for b.Loop() {
		Hunks(old, new)
	}
}
