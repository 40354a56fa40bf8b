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
