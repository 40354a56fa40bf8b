package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

func write(t *testing.T, r *testRunner, p string, data []byte) *runnerproto.WriteResult {
	t.Helper()
	return r.writeFile(t, &runnerproto.WriteRequest{Path: p, Data: data, Mode: 0o644, MakeParents: true})
}

// currentUmask is the process's umask, which the runner processes inherit, left as it is.
func currentUmask() uint32 {
	u := syscall.Umask(0o022)
	syscall.Umask(u)
	return uint32(u)
}

func TestWriteKeepsWhatTheFileIs(t *testing.T) {
	forEachRunner(t, testWriteKeepsWhatTheFileIs)
}

func testWriteKeepsWhatTheFileIs(t *testing.T, rn *testRunner) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mode := func(p string) uint32 {
		var st syscall.Stat_t
		must(syscall.Lstat(p, &st))
		return st.Mode & 0o7777
	}
	// A new file, with its parents.
	p := filepath.Join(dir, "a", "b", "new.txt")
	if r := write(t, rn, p, []byte("new")); r.Error != "" || r.NotRegular != "" || r.InPlace {
		t.Fatalf("new file: %+v", r)
	}
	if got, _ := os.ReadFile(p); string(got) != "new" || mode(p)&0o777 != 0o644&^currentUmask() {
		t.Fatalf("new file: %q mode %o", got, mode(p))
	}
	// An existing executable keeps its mode, setuid included.
	x := filepath.Join(dir, "x.sh")
	must(os.WriteFile(x, []byte("old"), 0o755))
	must(syscall.Chmod(x, 0o4755))
	if r := write(t, rn, x, []byte("#!/bin/sh\n")); r.Error != "" || r.InPlace {
		t.Fatalf("executable: %+v", r)
	}
	if got, _ := os.ReadFile(x); string(got) != "#!/bin/sh\n" || mode(x) != 0o4755 {
		t.Fatalf("executable: %q mode %o", got, mode(x))
	}
	// A link at the path's end is written through, in place, and stays a link.
	target := filepath.Join(dir, "target.txt")
	must(os.WriteFile(target, []byte("old"), 0o600))
	link := filepath.Join(dir, "link")
	must(os.Symlink("target.txt", link))
	if r := write(t, rn, link, []byte("through")); r.Error != "" || !r.InPlace {
		t.Fatalf("link: %+v", r)
	}
	if got, _ := os.ReadFile(target); string(got) != "through" {
		t.Fatalf("link target: %q", got)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
	// A file with another hard link keeps both names on one file.
	h1, h2 := filepath.Join(dir, "h1"), filepath.Join(dir, "h2")
	must(os.WriteFile(h1, []byte("old"), 0o644))
	must(os.Link(h1, h2))
	if r := write(t, rn, h1, []byte("both")); r.Error != "" || !r.InPlace {
		t.Fatalf("hard link: %+v", r)
	}
	if got, _ := os.ReadFile(h2); string(got) != "both" {
		t.Fatalf("hard link: %q", got)
	}
	// A directory, a fifo nobody reads (directly and through a link) are refused at once (a
	// runner that opened the fifo would block for good: the bound is generous, for emulation).
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	must(os.Symlink("fifo", filepath.Join(dir, "fifolink")))
	for name, want := range map[string]tree.Kind{"a": tree.Dir, "fifo": tree.Other, "fifolink": tree.Other} {
		start := time.Now()
		if r := write(t, rn, filepath.Join(dir, name), []byte("x")); r.NotRegular != want || time.Since(start) > 30*time.Second {
			t.Errorf("%s: %+v after %v", name, r, time.Since(start))
		}
	}
	// Nothing is left beside the files.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if len(e.Name()) > 0 && e.Name()[0] == '.' {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	// A missing parent without MakeParents is ENOENT, by name.
	r := rn.writeFile(t, &runnerproto.WriteRequest{Path: filepath.Join(dir, "no", "such"), Data: []byte("x"), Mode: 0o644})
	if r.Errno != "ENOENT" {
		t.Errorf("missing parent: %+v", r)
	}
}

// Readers never see a mix of two contents, however the writes and reads interleave.
func TestWriteIsNeverTorn(t *testing.T) {
	forEachRunner(t, testWriteIsNeverTorn)
}

func testWriteIsNeverTorn(t *testing.T, rn *testRunner) {
	p := filepath.Join(t.TempDir(), "f")
	a, b := bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 512<<10)
	if r := write(t, rn, p, a); r.Error != "" {
		t.Fatal(r.Error)
	}
	var stop atomic.Bool
	var torn atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				got, err := os.ReadFile(p)
				if err != nil || !(bytes.Equal(got, a) || bytes.Equal(got, b)) {
					torn.Add(1)
				}
			}
		}()
	}
	for i := range 200 {
		data := a
		if i%2 == 0 {
			data = b
		}
		if r := write(t, rn, p, data); r.Error != "" {
			t.Fatal(r.Error)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := torn.Load(); n > 0 {
		t.Fatalf("%d reads saw neither the old content nor the new", n)
	}
}
