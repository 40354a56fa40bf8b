// Package hostile is the attack vocabulary of the threat model and the host invariant's
// checker, shared by the generator of hostile trees against a real sshd (internal/review) and
// its smaller run end to end on the Lima VM (test/e2e).
package hostile

import (
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Attacks are guest commands (run in the staged copy); MARK is replaced by a path outside
// the working directory that must never come to exist.
var Attacks = []string{
	// Links and chains of links, each looking inside by its text or not.
	"ln -sfn .. d/up", "ln -sfn d/up/.. esc", "ln -sfn esc l1", "ln -sfn l1/.. l2", "ln -sfn l2/../etc/passwd pw",
	"ln -sfn ../.. up2", "ln -sfn /etc/passwd abs", "ln -sfn x/../.. lex", "ln -sfn inlink/../.. through",
	"ln -sfn hostlink via-host", "ln -sfn d/e deep", "ln -sfn deep/../../.. deep-out", "ln -sfn missing/../.. dangling-out",
	"rm -rf d && ln -sfn /etc d", "rm -rf x && ln -sfn .. x", "rm -f inlink && ln -sfn d/e inlink",
	"rm -rf d/e && ln -sfn ../.. d/e",
	// git's machinery at any depth and case.
	"mkdir -p sub/.git && printf '[core]\\n\\tfsmonitor = touch MARK\\n' > sub/.git/config",
	"mkdir -p .GIT/hooks && printf '#!/bin/sh\\ntouch MARK\\n' > .GIT/hooks/pre-commit",
	"mkdir -p y && printf 'gitdir: /etc\\n' > y/.git",
	"mkdir -p br/objects br/refs && echo 'ref: refs/heads/main' > br/HEAD",
	"printf '[submodule \"z\"]\\n\\tpath = z\\n\\turl = /etc\\n' > .gitmodules",
	"mkdir -p d/.Git && echo x > d/.Git/config",
	// Type changes.
	"rm -rf d && echo file > d", "rm -f a.txt && mkdir a.txt && echo in > a.txt/in", "rm -rf x && echo now-file > x",
	"rm -rf d/e && echo f > d/e",
	// Special files and modes.
	"mkfifo ff", "echo s > su && chmod 4777 su", "echo w > ww && chmod 666 ww", "chmod 777 d", "chmod 2755 a.txt",
	// Sizes.
	"head -c 3000000 /dev/urandom > big.bin", "seq 1 70000 > many.txt",
	// Odd names.
	`printf n > "$(printf 'new\nline')"`, `printf e > "$(printf 'esc\033[31mred')"`, `printf b > "$(printf 'bidi\342\200\256txt.exe')"`,
	`printf u > "$(printf 'bad\377utf8')"`, `printf l > "$(printf '%0250d' 0)"`,
	// Plain edits and deletions.
	"echo more >> a.txt", "rm -f d/f.txt", "rm -rf d/e", "echo new > d/new.txt", "echo x2 >> x/in.txt",
}

// FoldAttacks are guest commands that make names one name on a host directory that does not
// tell case or Unicode normalization apart (APFS, HFS+, NTFS), against Setup's tree: renames
// that only change case or normalization (with and without a content change), two new names
// for one, a new name for an existing host file, and directories among them.
var FoldAttacks = []string{
	"mv a.txt A.txt", "mv a.txt A.TXT && echo changed >> A.TXT", "rm -f keep.txt && echo k2 > KEEP.txt",
	"echo dup > A.txt", "echo one > New.txt && echo two > new.txt", "echo one > NEW.txt",
	"mv keep.txt KEEP.txt && echo k3 > keep.txt", "mv d/f.txt d/F.txt", "echo f2 > d/F.txt",
	"rm -f keep.txt && ln -sfn a.txt Keep.txt", "rm -f a.txt && mkdir A.txt && echo in > A.txt/in",
	"mkdir -p D && echo dd > D/f.txt", "mv d D", "mv x X", "mkdir -p X && echo xx > X/in.txt",
	`printf c > "$(printf 'caf\303\251')" && printf d > "$(printf 'cafe\314\201')"`,
	`mv a.txt "$(printf 'a\314\201.txt')" && printf e > "$(printf '\303\241.txt')"`,
	`printf n > "$(printf '\303\244.txt')" && mv "$(printf '\303\244.txt')" "$(printf 'A\314\210.txt')"`,
	"rm -f a.txt", "echo more >> A.txt",
}

// FoldOps draws a sequence of 2 to 9 operations, most of them from FoldAttacks.
func FoldOps(r *rand.Rand, mark string) []string {
	var ops []string
	for range 2 + r.Intn(8) {
		op := FoldAttacks[r.Intn(len(FoldAttacks))]
		if r.Intn(4) == 0 {
			op = Attacks[r.Intn(len(Attacks))]
		}
		ops = append(ops, strings.ReplaceAll(op, "MARK", mark))
	}
	return ops
}

// Ops draws a sequence of 2 to 9 attacks; mark is the path outside the working directory that
// a command run on the host would create.
func Ops(r *rand.Rand, mark string) []string {
	var ops []string
	for range 2 + r.Intn(8) {
		ops = append(ops, strings.ReplaceAll(Attacks[r.Intn(len(Attacks))], "MARK", mark))
	}
	return ops
}

// Setup makes a host project under base/w (files, a host link to /tmp outside, a link inside,
// a git repository when withGit), a sentinel directory base/outside, and returns the case to
// check once the review is done.
func Setup(t testing.TB, base string, withGit bool) *Case {
	t.Helper()
	c := &Case{Host: filepath.Join(base, "w"), Base: base, Outside: filepath.Join(base, "outside"), Mark: filepath.Join(base, "PWNED"), Edits: map[string]string{}}
	WriteTree(t, c.Host, map[string]string{"a.txt": "a\n", "d/f.txt": "f\n", "d/e/g.txt": "g\n", "x/in.txt": "x\n", "keep.txt": "k\n"})
	WriteTree(t, c.Outside, map[string]string{"sentinel": "untouched\n"})
	must(t, os.Symlink("/tmp", filepath.Join(c.Host, "hostlink")))
	must(t, os.Symlink("d", filepath.Join(c.Host, "inlink")))
	if withGit {
		RunGit(t, c.Host, "init", "-q")
		RunGit(t, c.Host, "add", "-A")
		RunGit(t, c.Host, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
	}
	return c
}

// Case is one hostile state: where the host project is, and what it was before the review.
type Case struct {
	Host, Base, Outside, Mark string
	Before                    Snapshot
	parentBefore              string
	// Edits are host files the person changed while the review was open, with their content.
	Edits map[string]string
}

// Snap records the host before the review.
func (c *Case) Snap(t testing.TB) {
	c.Before = Snap(t, c.Host)
	c.parentBefore = listNames(t, c.Base)
}

// Check walks the host after the review and reports every breach of the host invariant with
// t.Errorf, prefixed by what; it returns the number of checks made.
func (c *Case) Check(t testing.TB, what string) int {
	t.Helper()
	host, before := c.Host, c.Before
	after := Snap(t, host)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: "+format, append([]any{what}, args...)...)
	}
	n := 0
	// (a) Nothing outside the working directory changed, and nothing ran.
	n++
	if got := listNames(t, c.Base); got != c.parentBefore {
		fail("the parent directory changed: %s -> %s", c.parentBefore, got)
	}
	n++
	if data, err := os.ReadFile(filepath.Join(c.Outside, "sentinel")); err != nil || string(data) != "untouched\n" {
		fail("the sentinel outside changed: %q %v", data, err)
	}
	for _, repo := range gitRepos(after) {
		n++
		_ = exec.Command("git", "-C", filepath.Join(host, repo), "status", "--porcelain").Run() // what it may run matters, not its outcome
	}
	n++
	if _, err := os.Lstat(c.Mark); err == nil {
		fail("a guest command ran on the host (%s exists)", c.Mark)
	}
	// (b) Every link that led inside, or is new, leads inside.
	for p, e := range after {
		if e.mode&fs.ModeSymlink == 0 {
			continue
		}
		n++
		if e.escaped {
			if b, ok := before[p]; ok && b.mode&fs.ModeSymlink != 0 && b.target == e.target && b.escaped {
				continue // the host's own link, outside before too
			}
			fail("symlink %q -> %q leads outside the working directory", p, e.target)
		}
	}
	for p, e := range after {
		b, existed := before[p]
		changed := !existed || b != e
		// (c) git's machinery never written; .gitmodules untouched.
		if staging.IsGitMetadata(p) || strings.EqualFold(filepath.Base(p), ".gitmodules") {
			n++
			if changed {
				fail("git metadata %q written", p)
			}
		}
		// (d) No special file.
		n++
		if e.mode&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
			fail("special file %q on the host", p)
		}
		// (e) No mode beyond the umask (022 here) on what the review wrote.
		if changed && e.mode&fs.ModeSymlink == 0 {
			n++
			if e.mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 || e.mode.Perm()&0o022 != 0 {
				fail("%q has mode %v", p, e.mode)
			}
		}
		// (c) No new repository git would discover.
		if e.mode.IsDir() {
			if _, ok := after[join(p, "HEAD")]; ok {
				n++
				_, o := after[join(p, "objects")]
				_, rf := after[join(p, "refs")]
				_, hb := before[join(p, "HEAD")]
				_, ob := before[join(p, "objects")]
				_, rb := before[join(p, "refs")]
				if o && rf && !(hb && ob && rb) {
					fail("%q became a repository", p)
				}
			}
		}
	}
	// (f) Every host edit made during the review is intact.
	for p, data := range c.Edits {
		n++
		if got, err := os.ReadFile(filepath.Join(host, filepath.FromSlash(p))); err != nil || string(got) != data {
			fail("the person's edit of %q was lost: %q %v", p, got, err)
		}
	}
	return n
}

// Entry is one host path as a snapshot saw it.
type Entry struct {
	mode    fs.FileMode
	size    int64
	data    string // small files
	target  string
	escaped bool
}

// Snapshot is a host tree, by slash-separated relative path.
type Snapshot map[string]Entry

// Snap walks root without following links.
func Snap(t testing.TB, root string) Snapshot {
	t.Helper()
	out := Snapshot{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := Entry{mode: fi.Mode(), size: fi.Size()}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			e.target, _ = os.Readlink(p)
			e.escaped = EscapesOnDisk(root, rel)
		case fi.Mode().IsRegular() && fi.Size() < 1<<16:
			data, _ := os.ReadFile(p)
			e.data = string(data)
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// EscapesOnDisk is the checker's own resolution, written apart from review's guardFinalState on
// purpose: an oracle must not share the code it judges. It follows rel on the real file
// system, every link on the way: true when it leads outside root (a missing component counts
// as a directory: what could be made there later cannot make ".." climb less; an absolute
// target always leads out).
func EscapesOnDisk(root, rel string) bool {
	var cur []string
	comps := strings.Split(rel, "/")
	for hops := 0; len(comps) > 0; {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return true
			}
			cur = cur[:len(cur)-1]
			continue
		}
		p := filepath.Join(append([]string{root}, append(cur, c)...)...)
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > 40 {
				return false
			}
			tgt, _ := os.Readlink(p)
			if strings.HasPrefix(tgt, "/") {
				return true
			}
			comps = append(strings.Split(tgt, "/"), comps...)
			continue
		}
		cur = append(cur, c)
	}
	return false
}

func gitRepos(s Snapshot) []string {
	var out []string
	for p := range s {
		if filepath.Base(p) == ".git" {
			out = append(out, filepath.Dir(p))
		}
	}
	sort.Strings(out)
	return out
}

func listNames(t testing.TB, dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, ",")
}

func join(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}

// WriteTree writes files (relative path → content) under root.
func WriteTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(data), 0o644))
	}
}

// RunGit runs git in dir.
func RunGit(t testing.TB, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
