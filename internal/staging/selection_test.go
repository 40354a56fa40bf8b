package staging

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// A subdirectory of a repository is staged with the repository's ignore rules (git is asked).
func TestSelectInRepoSubdirectory(t *testing.T) {
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
	write(".gitignore", "node_modules/\n*.log\n")
	write("pkg/app/main.js", "x\n")
	write("pkg/app/node_modules/dep/index.js", "x\n")
	write("pkg/app/debug.log", "x\n")
	write("pkg/app/new.txt", "untracked\n")
	if out, err := exec.Command("git", "-C", root, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	sel, err := Select(context.Background(), filepath.Join(root, "pkg", "app"), SelectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range sel.Entries {
		got = append(got, string(e.Path))
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "main.js,new.txt" || !sel.InGitRepo {
		t.Errorf("selected %v (git: %v)", got, sel.InGitRepo)
	}
}
