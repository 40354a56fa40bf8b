package agentconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyKeepsModeAndSymlink(t *testing.T) {
	home, work := testDirs(t)
	real := filepath.Join(work, "dotfiles", "mcp.json") // a link inside the project is followed
	writeFile(t, real, "{}\n")
	if err := os.Chmod(real, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(work, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	mustApply(t, mustPlan(t, Options{Agent: "cursor", Workdir: work, HomeDir: home}))
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	info, err := os.Stat(real)
	if err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v)", info.Mode().Perm(), err)
	}
	if !strings.Contains(readFile(t, real), `"lima"`) {
		t.Errorf("the target was not written:\n%s", readFile(t, real))
	}
	entries, _ := os.ReadDir(filepath.Dir(real))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestApplyRefusesAFileChangedSincePlan(t *testing.T) {
	home, work := testDirs(t)
	path := filepath.Join(work, ".mcp.json")
	writeFile(t, path, "{}")
	changes := mustPlan(t, Options{Agent: "claude", Workdir: work, HomeDir: home})
	writeFile(t, path, `{"mcpServers": {"new": {"command": "x"}}}`)
	err := Apply(changes)
	if err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Fatalf("err = %v", err)
	}
	if got := readFile(t, path); got != `{"mcpServers": {"new": {"command": "x"}}}` {
		t.Errorf("overwritten: %s", got)
	}

	// A file that appeared since Plan found none is not overwritten either.
	other := filepath.Join(work, ".cursor", "mcp.json")
	changes = mustPlan(t, Options{Agent: "cursor", Workdir: work, HomeDir: home})
	writeFile(t, other, "{}")
	if err := Apply(changes); err == nil {
		t.Fatal("Apply overwrote a file created after Plan")
	}
}

func TestApplySkipsUnchangedFiles(t *testing.T) {
	home, work := testDirs(t)
	o := Options{Agent: "gemini", Workdir: work, HomeDir: home}
	mustApply(t, mustPlan(t, o))
	path := filepath.Join(work, ".gemini", "settings.json")
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Dir(path), 0o755)
	if err := Apply(mustPlan(t, o)); err != nil {
		t.Errorf("Apply of no change: %v", err)
	}
}

func TestApplyWritesThroughADanglingSymlink(t *testing.T) {
	home, work := testDirs(t)
	target := filepath.Join(work, "dotfiles", "gemini-settings.json")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(work, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(filepath.Dir(link), target)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, link); err != nil {
		t.Fatal(err)
	}
	changes := mustPlan(t, Options{Agent: "gemini", Workdir: work, HomeDir: home})
	if !changes[0].Creates() {
		t.Fatal("a dangling link should read as a missing file")
	}
	mustApply(t, changes)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if !strings.Contains(readFile(t, target), `"lima"`) {
		t.Errorf("the link's target was not written")
	}
}

// A project config that is, or lies under, a link leading out of the project is refused (a
// cloned project can hold .claude -> ~/.claude); the user's own config may be a link anywhere.
func TestPlanRefusesLinksOutOfTheProject(t *testing.T) {
	cases := map[string]func(t *testing.T, home, work, outside string){
		"file link": func(t *testing.T, home, work, outside string) {
			writeFile(t, filepath.Join(outside, "mcp.json"), "{}\n")
			mustSymlink(t, filepath.Join(outside, "mcp.json"), filepath.Join(work, ".mcp.json"))
		},
		"dangling file link": func(t *testing.T, home, work, outside string) {
			mustSymlink(t, filepath.Join(outside, "new.json"), filepath.Join(work, ".mcp.json"))
		},
		"parent directory link": func(t *testing.T, home, work, outside string) {
			mustSymlink(t, outside, filepath.Join(work, ".claude"))
		},
		"chain": func(t *testing.T, home, work, outside string) {
			mustSymlink(t, "b.json", filepath.Join(work, ".mcp.json"))
			mustSymlink(t, "../outside/c.json", filepath.Join(work, "b.json"))
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			home, work := testDirs(t)
			outside := filepath.Join(filepath.Dir(work), "outside")
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			setup(t, home, work, outside)
			_, err := Plan(Options{Agent: "claude", Workdir: work, HomeDir: home, DisableBuiltinTools: true})
			if err == nil || !strings.Contains(err.Error(), "leads out of the project") {
				t.Fatalf("Plan: %v", err)
			}
			if ents, _ := os.ReadDir(outside); len(ents) > 1 {
				t.Errorf("written outside: %v", ents)
			}
		})
	}
	// --user: the user's own links are followed.
	home, work := testDirs(t)
	dot := filepath.Join(filepath.Dir(home), "dotfiles")
	writeFile(t, filepath.Join(dot, "claude.json"), "{}\n")
	mustSymlink(t, filepath.Join(dot, "claude.json"), filepath.Join(home, ".claude.json"))
	mustApply(t, mustPlan(t, Options{Agent: "claude", User: true, Workdir: work, HomeDir: home}))
	if !strings.Contains(readFile(t, filepath.Join(dot, "claude.json")), "lima") {
		t.Error("--user did not write through the user's own link")
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
