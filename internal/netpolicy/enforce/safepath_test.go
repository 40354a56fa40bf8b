package enforce

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// The uids of the tests' staging (Lima) user and agent: real to the kernel (the agent's swaps
// run as a process of that uid), with no passwd entry needed.
const testStaging, testAgent = 4241, 4242

// asAgent runs sh -c script as the agent's uid (the swaps the attacker makes).
func asAgent(script string, args ...string) error {
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: testAgent, Gid: testAgent}}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("as the agent: %s: %v: %s", script, err, out)
	}
	return nil
}

// swapForLink replaces comp by a symbolic link to target, as the agent (an error when the
// agent may not: what it cannot do is no attack).
func swapForLink(comp, target string) error {
	return asAgent(`if [ -e "$1" ] || [ -L "$1" ]; then mv -- "$1" "$1.away"; fi; ln -s -- "$2" "$1"`, comp, target)
}

// snapshot lists every entry under dir with its owner and mode (no link followed).
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		lines = append(lines, fmt.Sprintf("%s %d:%d %v", p, st.Uid, st.Gid, info.Mode()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// linkWorld is a temporary tree: base (root's) holds outside (a directory and a file of root's,
// what a link may point at: never /etc) and home (the agent's, as its home is), where the copy
// lives at home/a/b/c/copy.
type linkWorld struct {
	base, outside, outsideFile, home, own string
}

// outsideTree is a directory of root's, outside the agent's tree, that holds the rest of the
// copy's path from every depth (b/c/copy, c/copy, copy): a link to it makes the whole path
// resolve.
func (w *linkWorld) outsideTree() string { return filepath.Join(w.outside, "tree") }

func newLinkWorld(t *testing.T) *linkWorld {
	t.Helper()
	base, err := os.MkdirTemp("", "safepath-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &linkWorld{base: base, outside: filepath.Join(base, "outside"), outsideFile: filepath.Join(base, "outside-file"),
		home: filepath.Join(base, "home")}
	w.own = filepath.Join(w.home, "a", "b", "c", "copy")
	w.makeOutside()
	return w
}

// makeOutside makes (again) what the links point at.
func (w *linkWorld) makeOutside() {
	os.RemoveAll(w.outside)
	os.Remove(w.outsideFile)
	os.MkdirAll(filepath.Join(w.outside, "sub"), 0o755)
	os.WriteFile(filepath.Join(w.outside, "keep"), []byte("x"), 0o644)
	for _, rest := range []string{"b/c/copy/sub", "c/copy/sub", "copy/sub", "sub"} {
		os.MkdirAll(filepath.Join(w.outsideTree(), rest), 0o755)
		os.WriteFile(filepath.Join(w.outsideTree(), rest, "keep"), []byte("x"), 0o644)
	}
	os.WriteFile(w.outsideFile, []byte("x"), 0o644)
}

// reset makes home again: the agent's, down to the copy's parent c, with the copy when withCopy
// (its top the agent's, what is in it copyOwner's: staged by the staging user, or the agent's).
func (w *linkWorld) reset(t *testing.T, withCopy bool, copyOwner int) {
	t.Helper()
	if err := os.RemoveAll(w.home); err != nil {
		t.Fatal(err)
	}
	c := filepath.Dir(w.own)
	if err := os.MkdirAll(c, 0o755); err != nil {
		t.Fatal(err)
	}
	for p := c; p != w.base; p = filepath.Dir(p) {
		os.Lchown(p, testAgent, testAgent)
	}
	if withCopy {
		os.MkdirAll(filepath.Join(w.own, "sub", "deeper"), 0o755)
		os.WriteFile(filepath.Join(w.own, "sub", "deeper", "file"), []byte("x"), 0o644)
		filepath.WalkDir(w.own, func(p string, d fs.DirEntry, err error) error {
			return os.Lchown(p, copyOwner, copyOwner)
		})
		// The copy's top is the agent's (from the last connect): it can swap what is in it.
		os.Lchown(w.own, testAgent, testAgent)
	}
}

// Root acts on the agent's copy (ensure --own: made and handed over; release: handed back)
// through no symbolic link at any depth. A generator: every component the agent owns, and one
// inside the copy, is swapped for a link to a directory (one holding the rest of the path, too),
// a file or nothing, before the walk
// (through openat2 and through the per-component walk) or while the walk is at it; nothing
// outside the agent's tree is made or changes owner, and a link on the path is an error naming
// the path.
func TestNoFollowAtAnyDepth(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chown, and a process of another uid")
	}
	w := newLinkWorld(t)
	before := snapshot(t, w.base+"/outside") + "\n" + snapshot(t, w.outsideFile)
	rels := []string{"a", "a/b", "a/b/c", "a/b/c/copy", "a/b/c/copy/sub"}
	targets := map[string]string{"dir": w.outside, "dir-with-the-path": w.outsideTree(), "file": w.outsideFile, "dangling": filepath.Join(w.outside, "nothing", "here")}
	type op struct {
		name     string
		withCopy bool
		owner    int
		run      func() error
	}
	ops := []op{
		{"ensure-own new copy", false, 0, func() error { return ownCopy(w.own, testStaging, testAgent, testAgent) }},
		{"ensure-own staged copy", true, testStaging, func() error { return ownCopy(w.own, testStaging, testAgent, testAgent) }},
		{"giveTree", true, testStaging, func() error { return giveTree(w.own, testStaging, testAgent, testAgent) }},
		{"release", true, testAgent, func() error { return handBack(w.own, testAgent, testStaging, testStaging) }},
	}
	cases := 0
	for _, o := range ops {
		for _, rel := range rels {
			for kind, target := range targets {
				for _, when := range []string{"before/openat2", "before/walk", "mid-walk"} {
					name := fmt.Sprintf("%s/%s/%s/%s", o.name, rel, kind, when)
					w.reset(t, o.withCopy, o.owner)
					comp := filepath.Join(w.home, rel)
					if !o.withCopy && strings.HasPrefix(rel, "a/b/c/copy") {
						if rel != "a/b/c/copy" {
							continue // no copy yet: nothing inside it
						}
					}
					forceComponentWalk = when != "before/openat2"
					swapped := false
					if when == "mid-walk" {
						beforeOpenHook = func(at string) {
							if at == comp && !swapped {
								// Mid-release, the copy's top may be the staging user's already.
								swapped = swapForLink(comp, target) == nil
							}
						}
					} else {
						if err := swapForLink(comp, target); err != nil {
							t.Fatal(err)
						}
						swapped = true
					}
					err := o.run()
					beforeOpenHook, forceComponentWalk = nil, false
					cases++
					if after := snapshot(t, w.base+"/outside") + "\n" + snapshot(t, w.outsideFile); after != before {
						t.Errorf("%s: outside the agent's tree changed:\nbefore:\n%s\nafter:\n%s", name, before, after)
						w.makeOutside() // as it was, for the next cases
						continue
					}
					if !swapped {
						continue // the walk never reached it, or the agent could not swap it then
					}
					onPath := !strings.HasPrefix(rel, "a/b/c/copy/")
					if onPath {
						var se *SymlinkError
						if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), w.own) {
							t.Errorf("%s: err = %v; want an error naming %s, with a link not followed", name, err, w.own)
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases, outside unchanged in each", cases)
}

// Without links: ensure --own makes what is missing (the agent's below its home, root's
// elsewhere), hands the staged copy over, and release hands it back; entries of others stay.
func TestOwnCopyAndHandBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	for _, walk := range []bool{false, true} {
		forceComponentWalk = walk
		w := newLinkWorld(t)
		os.Mkdir(w.home, 0o700)
		os.Chown(w.home, testAgent, testAgent)
		if err := ownCopy(w.own, testStaging, testAgent, testAgent); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{w.home + "/a", w.home + "/a/b", w.home + "/a/b/c", w.own} {
			if got := owner(t, p); got != testAgent {
				t.Errorf("%s is uid %d's, want the agent's", p, got)
			}
		}
		// A copy outside the home: its parents root's, the copy the agent's.
		elsewhere := filepath.Join(w.base, "Users", "me", "proj")
		if err := ownCopy(elsewhere, testStaging, testAgent, testAgent); err != nil {
			t.Fatal(err)
		}
		if owner(t, filepath.Dir(elsewhere)) != 0 || owner(t, elsewhere) != testAgent {
			t.Errorf("outside the home: parent %d's, copy %d's", owner(t, filepath.Dir(elsewhere)), owner(t, elsewhere))
		}
		os.WriteFile(filepath.Join(w.own, "made"), []byte("x"), 0o644)
		os.Chown(filepath.Join(w.own, "made"), testAgent, testAgent)
		os.WriteFile(filepath.Join(w.own, "roots"), []byte("x"), 0o644)
		if err := handBack(w.own, testAgent, testStaging, testStaging); err != nil {
			t.Fatal(err)
		}
		if owner(t, w.own) != testStaging || owner(t, filepath.Join(w.own, "made")) != testStaging || owner(t, filepath.Join(w.own, "roots")) != 0 {
			t.Errorf("after release: copy %d's, made %d's, roots %d's", owner(t, w.own), owner(t, filepath.Join(w.own, "made")), owner(t, filepath.Join(w.own, "roots")))
		}
		if err := handBack(filepath.Join(w.home, "never"), testAgent, testStaging, testStaging); err != nil {
			t.Errorf("release of a copy never made: %v", err)
		}
		for _, bad := range []string{"relative", "/a/../b", "/a//b"} {
			if _, err := openDirNoFollow(bad); err == nil {
				t.Errorf("%q accepted", bad)
			}
		}
	}
	forceComponentWalk = false
}
