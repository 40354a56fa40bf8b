package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// The file tools' requests, each answered in one round trip by every runner: a read that
// follows links (and still never opens what is not a regular file), a glob that looks at its
// directory, an edit.

func TestProtocolReadFollowing(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		root := sampleTree(t)
		mustDo(t, os.Symlink("fifo", filepath.Join(root, "to-fifo")))
		mustDo(t, os.Symlink("/dev/zero", filepath.Join(root, "to-zero")))
		mustDo(t, os.Symlink("sub", filepath.Join(root, "to-sub")))
		mustDo(t, os.Symlink("loop", filepath.Join(root, "loop")))
		read := func(rel string) *runnerproto.ReadResult {
			t.Helper()
			start := time.Now()
			resp := r.call(t, &runnerproto.Request{Read: &runnerproto.ReadRequest{Path: tree.Name(filepath.Join(root, rel)), Limit: 100, Follow: true}})
			if resp.Read == nil || time.Since(start) > 30*time.Second {
				t.Fatalf("%s: %+v (error %q) after %v", rel, resp.Read, resp.Error, time.Since(start))
			}
			return resp.Read
		}
		if got := read("sub/link"); string(got.Data) != "hello\n" || got.Size != 6 || got.NotRegular != "" || os.FileMode(got.Mode)&os.ModeSetuid == 0 {
			t.Errorf("a link followed: %+v", got)
		}
		for rel, want := range map[string]tree.Kind{"to-fifo": tree.Other, "to-zero": tree.Other, "to-sub": tree.Dir, "fifo": tree.Other, "sub": tree.Dir} {
			if got := read(rel); got.NotRegular != want || len(got.Data) != 0 {
				t.Errorf("%s: %+v, want %s", rel, got, want)
			}
		}
		if got := read("to-fifo"); os.FileMode(got.Mode)&os.ModeNamedPipe == 0 {
			t.Errorf("to-fifo: mode %v", os.FileMode(got.Mode))
		}
		if got := read("absent"); !got.Missing {
			t.Errorf("absent: %+v", got)
		}
		if got := read("a.txt/x"); got.Errno != "ENOTDIR" {
			t.Errorf("through a file: %+v", got)
		}
		if got := read("loop"); got.Errno != "ELOOP" {
			t.Errorf("a loop of links: %+v", got)
		}
	})
}

func TestProtocolGlobLooksAtItsDirectory(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		root := sampleTree(t)
		glob := func(dir string) *runnerproto.Response {
			return r.call(t, &runnerproto.Request{Glob: &runnerproto.GlobRequest{Dir: dir, Pattern: "*", MaxMatches: 10}})
		}
		if resp := glob(filepath.Join(root, "absent")); resp.Glob == nil || resp.Glob.DirErrno != "ENOENT" || len(resp.Glob.Matches) != 0 {
			t.Errorf("absent: %+v (error %q)", resp.Glob, resp.Error)
		}
		if resp := glob(filepath.Join(root, "a.txt")); resp.Glob == nil || !resp.Glob.NotDir || len(resp.Glob.Matches) != 0 {
			t.Errorf("a file: %+v (error %q)", resp.Glob, resp.Error)
		}
		if resp := glob(filepath.Join(root, "sub")); resp.Glob == nil || resp.Glob.NotDir || resp.Glob.DirErrno != "" || len(resp.Glob.Matches) != 3 {
			t.Errorf("sub: %+v (error %q)", resp.Glob, resp.Error)
		}
	})
}

func TestProtocolEdit(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		root := sampleTree(t)
		edit := func(q runnerproto.EditRequest) *runnerproto.EditResult {
			t.Helper()
			if !strings.HasPrefix(q.Path, "/") {
				q.Path = filepath.Join(root, q.Path)
			}
			if q.MaxBytes == 0 {
				q.MaxBytes = 1 << 20
			}
			start := time.Now()
			resp := r.call(t, &runnerproto.Request{Edit: &q})
			if resp.Edit == nil || time.Since(start) > 30*time.Second {
				t.Fatalf("%+v: %+v (error %q) after %v", q, resp.Edit, resp.Error, time.Since(start))
			}
			return resp.Edit
		}
		content := func(rel string) string {
			t.Helper()
			b, err := os.ReadFile(filepath.Join(root, rel))
			mustDo(t, err)
			return string(b)
		}
		mustDo(t, os.WriteFile(filepath.Join(root, "f.go"), []byte("a := 1\nb := 1\n"), 0o640))
		if got := edit(runnerproto.EditRequest{Path: "f.go", Old: "a := 1", New: "a := 2", Count: 1}); got.Replaced != 1 || got.Found != 1 || content("f.go") != "a := 2\nb := 1\n" {
			t.Errorf("one: %+v, %q", got, content("f.go"))
		}
		if fi, err := os.Stat(filepath.Join(root, "f.go")); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("the mode after an edit: %v %v", fi.Mode(), err)
		}
		if got := edit(runnerproto.EditRequest{Path: "f.go", Old: ":= ", New: "= ", Count: 1}); got.Found != 2 || got.Replaced != 0 || content("f.go") != "a := 2\nb := 1\n" {
			t.Errorf("two found, one asked for: %+v, %q", got, content("f.go"))
		}
		if got := edit(runnerproto.EditRequest{Path: "f.go", Old: "zzz", New: "y", Count: 1}); got.Found != 0 || got.Replaced != 0 {
			t.Errorf("not found: %+v", got)
		}
		// Through a link at the path's end: the file it leads to is edited, the link stays.
		if got := edit(runnerproto.EditRequest{Path: "sub/link", Old: "hello", New: "bye", Count: 1}); got.Replaced != 1 || content("a.txt") != "bye\n" {
			t.Errorf("through a link: %+v, %q", got, content("a.txt"))
		}
		if fi, err := os.Lstat(filepath.Join(root, "sub/link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v %v", fi, err)
		}
		if got := edit(runnerproto.EditRequest{Path: "new/dir/n.txt", New: "made\n"}); !got.Created || content("new/dir/n.txt") != "made\n" {
			t.Errorf("create: %+v", got)
		}
		if got := edit(runnerproto.EditRequest{Path: "f.go", New: "x"}); !got.Exists || got.Created {
			t.Errorf("create over a file: %+v", got)
		}
		if got := edit(runnerproto.EditRequest{Path: "absent", Old: "a", New: "b", Count: 1}); !got.Missing {
			t.Errorf("absent: %+v", got)
		}
		if got := edit(runnerproto.EditRequest{Path: "build/out.o", Old: "E", New: "e", Count: 1}); got.Binary {
			// "\x7fELF" is valid UTF-8 without NUL: text by the tools' rule.
			t.Errorf("\\x7fELF: %+v", got)
		}
		mustDo(t, os.WriteFile(filepath.Join(root, "bin"), []byte("a\x00b"), 0o644))
		if got := edit(runnerproto.EditRequest{Path: "bin", Old: "a", New: "c", Count: 1}); !got.Binary || got.Replaced != 0 {
			t.Errorf("binary: %+v", got)
		}
		if got := edit(runnerproto.EditRequest{Path: "f.go", Old: "a", New: "c", Count: 1, MaxBytes: 4}); !got.TooLarge || got.Size != 14 {
			t.Errorf("too large: %+v", got)
		}
		mustDo(t, os.Symlink("fifo", filepath.Join(root, "to-fifo")))
		for rel, want := range map[string]tree.Kind{"fifo": tree.Other, "to-fifo": tree.Other, "sub": tree.Dir} {
			if got := edit(runnerproto.EditRequest{Path: rel, Old: "a", New: "b", Count: 1}); got.NotRegular != want {
				t.Errorf("%s: %+v", rel, got)
			}
		}
		if got := edit(runnerproto.EditRequest{Path: "a.txt/x", Old: "a", New: "b", Count: 1}); got.Errno != "ENOTDIR" {
			t.Errorf("through a file: %+v", got)
		}
	})
}

// The guard: a file written by another process between the edit's read and its write is not
// overwritten with the stale edit.
func TestEditGuardKeepsAConcurrentWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.txt")
	mustDo(t, os.WriteFile(p, []byte("one\n"), 0o644))
	editHook = func() { mustDo(t, os.WriteFile(p, []byte("one, written meanwhile\n"), 0o644)) }
	t.Cleanup(func() { editHook = nil })
	res, err := runEdit(&runnerproto.EditRequest{Path: p, Old: "one", New: "two", Count: 1, MaxBytes: 100})
	mustDo(t, err)
	b, _ := os.ReadFile(p)
	if !res.Changed || res.Replaced != 0 || res.Write != nil || string(b) != "one, written meanwhile\n" {
		t.Errorf("%+v, file %q", res, b)
	}
	editHook = nil
	res, err = runEdit(&runnerproto.EditRequest{Path: p, Old: "one", New: "two", Count: 1, MaxBytes: 100})
	mustDo(t, err)
	if b, _ := os.ReadFile(p); res.Changed || res.Replaced != 1 || string(b) != "two, written meanwhile\n" {
		t.Errorf("without a writer: %+v, file %q", res, b)
	}
}
