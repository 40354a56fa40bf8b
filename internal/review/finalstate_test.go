package review

import (
	"fmt"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// linkStep is a planned symlink at p (the host has nothing there).
func linkStep(p, target string) *step {
	e := &tree.Entry{Path: tree.Name(p), Type: tree.Symlink, Target: tree.Name(target)}
	return &step{it: &Item{Path: p, Guest: e}, hostOp: true, after: e}
}

func hostFor(t *testing.T, setup func(dir string)) *hostTree {
	t.Helper()
	dir := t.TempDir()
	setup(dir)
	h, err := openHost(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	return h
}

func refusedPaths(refused map[*step]string) string {
	var out []string
	for s := range refused {
		out = append(out, s.it.Path)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// The chain of the issue: each link looks inside by its text, together they lead out.
func TestGuardRefusesChainedEscape(t *testing.T) {
	h := hostFor(t, func(dir string) { must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755)) })
	steps := []*step{
		linkStep("d/up", ".."),
		linkStep("esc", "d/up/.."),
		linkStep("l1", "esc"),
		linkStep("l2", "l1/.."),
		linkStep("pw", "l2/../../etc/passwd"),
		linkStep("fine", "d/up/d"),
	}
	for _, s := range steps {
		if !symlinkTargetInside(s.it.Path, string(s.after.Target)) && s.it.Path != "pw" {
			t.Fatalf("%s does not look inside by its text: the test would prove nothing", s.it.Path)
		}
	}
	refused := map[*step]string{}
	must(t, guardFinalState(h, steps, refused))
	if got := refusedPaths(refused); got != "esc l1 l2 pw" {
		t.Errorf("refused %q, want the links that lead out (d/up itself resolves to the root)", got)
	}
}

// A host link that led inside must not be made to lead outside by a planned change: here
// the host's x -> d/../.. works only while d is a link two levels down.
func TestGuardProtectsHostLinks(t *testing.T) {
	h := hostFor(t, func(dir string) {
		must(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
		must(t, os.Symlink("a/b", filepath.Join(dir, "d")))
		must(t, os.Symlink("d/../..", filepath.Join(dir, "x")))
	})
	old := &tree.Entry{Path: "d", Type: tree.Symlink, Target: "a/b"}
	dir := &tree.Entry{Path: "d", Type: tree.Dir, Mode: 0o755}
	s := &step{it: &Item{Path: "d", Host: old, Guest: dir}, hostOp: true, after: dir}
	refused := map[*step]string{}
	must(t, guardFinalState(h, []*step{s}, refused))
	if refused[s] == "" || !strings.Contains(refused[s], "x") {
		t.Errorf("replacing d by a directory would make the host's x lead outside; refused: %v", refused)
	}
}

// A link replacing a directory that is refused keeps the directory's files: a type change is
// one unit.
func TestGuardRefusesWholeUnit(t *testing.T) {
	h := hostFor(t, func(dir string) {
		must(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "d", "f"), nil, 0o644))
	})
	hostDir := &tree.Entry{Path: "d", Type: tree.Dir, Mode: 0o755}
	hostFile := &tree.Entry{Path: "d/f", Type: tree.File, Mode: 0o644}
	link := &tree.Entry{Path: "d", Type: tree.Symlink, Target: "../.."}
	sd := &step{it: &Item{Path: "d", Host: hostDir, Guest: link}, hostOp: true, after: link}
	sf := &step{it: &Item{Path: "d/f", Host: hostFile}, hostOp: true}
	refused := map[*step]string{}
	must(t, guardFinalState(h, []*step{sf, sd}, refused))
	if refused[sd] == "" || refused[sf] == "" {
		t.Errorf("the link and the deletion below it go together: %v", refused)
	}
}

// Names git would open as its own directory, on any host.
func TestRefusePathGitMetadata(t *testing.T) {
	for _, p := range []string{".git", ".git/config", "sub/.git/config", "a/b/.GIT/hooks/x", "sub/.Git", "x/.git./config", "x/git~1/config", "x/.g\u200cit/config", "x/\ufeff.git/HEAD", "m/.gitmodules", ".GitModules"} {
		if why := refusePath(p); why != refusedGit && why != refusedGitmodules {
			t.Errorf("%q: %q", p, why)
		}
	}
	for _, p := range []string{"gitx", ".github/workflows/x.yml", "a/.gitignore", "a/git", "dot.git/x"} {
		if why := refusePath(p); why != "" {
			t.Errorf("%q refused: %q", p, why)
		}
	}
}

func TestGuardRefusesBareRepository(t *testing.T) {
	h := hostFor(t, func(dir string) { must(t, os.MkdirAll(filepath.Join(dir, "x", "refs"), 0o755)) })
	head := &tree.Entry{Path: "x/HEAD", Type: tree.File, Mode: 0o644}
	objs := &tree.Entry{Path: "x/objects", Type: tree.Dir, Mode: 0o755}
	sh := &step{it: &Item{Path: "x/HEAD", Guest: head}, hostOp: true, after: head}
	so := &step{it: &Item{Path: "x/objects", Guest: objs}, hostOp: true, after: objs}
	other := &step{it: &Item{Path: "y/HEAD", Guest: head}, hostOp: true, after: head}
	refused := map[*step]string{}
	must(t, guardFinalState(h, []*step{sh, so, other}, refused))
	if refused[sh] != refusedBareRepo || refused[so] != refusedBareRepo || refused[other] != "" {
		t.Errorf("refused: %v", refused)
	}
}

// A seeded generator of link sets: whatever the guard leaves, no link of the final tree (made
// for real on disk) resolves outside the directory, as the kernel resolves it.
func TestGuardGeneratedLinkSets(t *testing.T) {
	names := []string{"a", "b", "d", "d/e", "d/e/f", "x", "y"}
	targets := []string{".", "..", "../..", "a", "b", "d", "d/e", "d/..", "d/e/../..", "x/..", "y/../..", "x", "y/e", "missing/../..", "d/e/f/..", "a/../d"}
	escapes := 0
	for seed := int64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		base := t.TempDir()
		dir := filepath.Join(base, "w")
		must(t, os.MkdirAll(filepath.Join(dir, "d", "e"), 0o755))
		var steps []*step
		used := map[string]bool{}
		for range 1 + r.Intn(6) {
			p := names[r.Intn(len(names))]
			if used[p] || p == "d" || p == "d/e" {
				continue
			}
			used[p] = true
			steps = append(steps, linkStep(p, targets[r.Intn(len(targets))]))
		}
		h, err := openHost(dir)
		must(t, err)
		refused := map[*step]string{}
		must(t, guardFinalState(h, steps, refused))
		h.close()
		// Make what the guard allowed, for real, and ask the kernel.
		for _, s := range steps {
			if refused[s] != "" {
				continue
			}
			must(t, os.Symlink(string(s.after.Target), filepath.Join(dir, s.it.Path)))
		}
		for _, s := range steps {
			if refused[s] != "" {
				continue
			}
			real, err := filepath.EvalSymlinks(filepath.Join(dir, s.it.Path))
			if err != nil {
				continue // dangling or a loop: leads nowhere
			}
			if real != dir && !strings.HasPrefix(real, dir+"/") {
				t.Errorf("seed %d: %s -> %s resolves to %s, outside %s", seed, s.it.Path, s.after.Target, real, dir)
			}
		}
		escapes += len(refused)
	}
	if escapes == 0 {
		t.Fatal("the generator never produced an escape: it tests nothing")
	}
	t.Logf("300 link sets, %d links refused", escapes)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var _ = path.Join
var _ = fmt.Sprint
