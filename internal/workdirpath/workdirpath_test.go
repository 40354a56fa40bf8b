package workdirpath_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

func TestResolveAndAbs(t *testing.T) {
	real, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(real, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(real, "link")
	if err := os.Symlink("proj", link); err != nil {
		t.Fatal(err)
	}
	if got, err := workdirpath.Resolve(link); err != nil || got != proj {
		t.Errorf("Resolve(link) = %q, %v; want %q", got, err, proj)
	}
	if got, err := workdirpath.Abs(link); err != nil || got != link {
		t.Errorf("Abs(link) = %q, %v; want %q (symlinks kept)", got, err, link)
	}
	// A directory that does not exist (yet) is made absolute all the same.
	if got, err := workdirpath.Resolve(filepath.Join(link, "no", "..", "nope")); err != nil || got != filepath.Join(link, "nope") {
		t.Errorf("Resolve(missing) = %q, %v", got, err)
	}

	t.Chdir(link)
	if got, err := workdirpath.Resolve(""); err != nil || got != proj {
		t.Errorf("Resolve(\"\") in the link = %q, %v; want %q", got, err, proj)
	}
	if got, err := workdirpath.Abs("sub"); err != nil || !strings.HasSuffix(got, string(filepath.Separator)+"sub") || !filepath.IsAbs(got) {
		t.Errorf("Abs(sub) = %q, %v", got, err)
	}
}

func TestRel(t *testing.T) {
	real, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(real, "proj")
	if err := os.MkdirAll(filepath.Join(work, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(work, "src"))
	for p, want := range map[string]string{
		"a.go":                                 "src/a.go",
		"../README":                            "README",
		".":                                    "src",
		"..":                                   ".",
		filepath.Join(work, "x", "..", "y.go"): "y.go",
	} {
		if got, err := workdirpath.Rel(work, p); err != nil || got != want {
			t.Errorf("Rel(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	for _, p := range []string{"../..", "/etc/passwd", work + "-other/a"} {
		if got, err := workdirpath.Rel(work, p); err == nil || !strings.Contains(err.Error(), "is outside the working directory "+work) {
			t.Errorf("Rel(%q) = %q, %v; want an error", p, got, err)
		}
	}
}
