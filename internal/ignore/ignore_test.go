package ignore

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCollectAndMatch(t *testing.T) {
	root := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "node_modules/\n.env\n*.log\n!keep.log\n")
	write("sub/.gitignore", "build/\n/local.txt\n")
	write(ProjectFile, "secrets/\n")
	write(".git/info/exclude", "scratch.tmp\n")
	ps, err := Collect(root, Options{Excludes: []string{"*.bin"}})
	if err != nil {
		t.Fatal(err)
	}
	m := New(ps)
	for rel, want := range map[string]bool{
		"node_modules": true, "a/node_modules": true, ".env": true, "x.log": true, "keep.log": false,
		"sub/build": true, "build": false, "sub/local.txt": true, "local.txt": false, "sub/deep/local.txt": false,
		"secrets": true, "scratch.tmp": true, "data.bin": true, "main.go": false, "sub": false,
	} {
		isDir := rel == "node_modules" || rel == "a/node_modules" || rel == "sub/build" || rel == "build" || rel == "secrets" || rel == "sub"
		if got := m.Ignored(rel, isDir); got != want {
			t.Errorf("Ignored(%q) = %v, want %v", rel, got, want)
		}
	}
	ps, _ = Collect(root, Options{NoGitignore: true})
	m = New(ps)
	if m.Ignored(".env", false) || !m.Ignored("secrets", true) {
		t.Error("--include-ignored: .gitignore must not apply, the project file must")
	}
}
