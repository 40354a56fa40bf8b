package udiff

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
