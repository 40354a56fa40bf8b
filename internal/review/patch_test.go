package review

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Names from the guest cannot add lines to a patch: git apply creates exactly the named files.
func TestPatchQuotesHostileNames(t *testing.T) {
	names := []string{
		"evil\n+++ b\\injected\n@@ -0,0 +1 @@\n+pwned",
		"tab\tand \"quote\" and \\back",
		"bidi\u202eexe.txt",
		"bad\xffutf8",
		"esc\x1b[31mred",
	}
	cs := &Changeset{}
	for _, n := range names {
		g := &tree.Entry{Path: tree.Name(n), Type: tree.File, Mode: 0o644, Size: 3}
		cs.Items = append(cs.Items, &Item{Path: n, Display: termsafe.Path(n), Kind: staging.Added, Guest: g, GuestText: "hi\n", Hunks: udiff.Hunks("", "hi\n")})
	}
	cs.Items = append(cs.Items, &Item{Path: "r", Display: "r", Refused: "lstat r\n+++ b/injected2\n: bad"})
	p := Patch(cs)
	for _, l := range strings.Split(p, "\n") {
		if strings.HasPrefix(l, "+++ b/injected") {
			t.Fatalf("a name injected a header line:\n%s", p)
		}
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(p)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s\npatch:\n%s", args, err, out, p)
		}
		return string(out)
	}
	git("init", "-q")
	git("apply", "-")
	ents, err := os.ReadDir(dir)
	must(t, err)
	got := map[string]bool{}
	for _, e := range ents {
		if e.Name() != ".git" {
			got[e.Name()] = true
		}
	}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || string(data) != "hi\n" {
			t.Errorf("%q: %q %v", n, data, err)
		}
		delete(got, n)
	}
	if len(got) != 0 {
		t.Errorf("git apply created other files: %v", got)
	}
}

// A rename under the host's name rule is a git rename in the patch, with its content change:
// git apply renames the file and applies the hunks.
func TestPatchRename(t *testing.T) {
	old, new := "a\nb\nc\n", "a\nB\nc\n"
	base := &tree.Entry{Type: tree.File, Mode: 0o644, Size: int64(len(old))}
	g := &tree.Entry{Type: tree.File, Mode: 0o644, Size: int64(len(new))}
	from := &Item{Path: "main.go", Display: "main.go", Kind: staging.Deleted, Base: base, Host: base}
	cs := &Changeset{Items: []*Item{
		{Path: "Main.go", Display: "Main.go", Kind: staging.Added, Guest: g, Host: base, From: from, Text: true, BaseText: old, GuestText: new, Hunks: udiff.Hunks(old, new)},
		{Path: "Same.txt", Display: "Same.txt", Kind: staging.Added, Guest: g, Host: base, Text: true, BaseText: old, GuestText: old,
			From: &Item{Path: "same.txt", Display: "same.txt", Kind: staging.Deleted, Base: base, Host: base}},
	}}
	p := Patch(cs)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(old), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "same.txt"), []byte(old), 0o644))
	cmd := exec.Command("git", "apply", "-")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(p)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, p)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "Main.go")); err != nil || string(data) != new {
		t.Errorf("Main.go: %q %v\npatch:\n%s", data, err, p)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "Same.txt")); err != nil || string(data) != old {
		t.Errorf("Same.txt: %q %v\npatch:\n%s", data, err, p)
	}
	for _, gone := range []string{"main.go", "same.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s is still there:\n%s", gone, p)
		}
	}
}
