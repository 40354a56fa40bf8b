package walk

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/ignore"
)

// makeEntries fills dir with every kind of entry a guest copy can hold, with seeded mode
// bits (setuid, setgid and sticky among them), sizes and times.
func makeEntries(t *testing.T, dir string, rng *rand.Rand) {
	t.Helper()
	for i := range 40 {
		p := filepath.Join(dir, fmt.Sprintf("e%02d", i))
		mode := os.FileMode(rng.IntN(0o1000))
		var err error
		switch i % 6 {
		case 0, 1:
			err = os.WriteFile(p, make([]byte, rng.IntN(5000)), 0o600)
		case 2:
			err = os.Mkdir(p, 0o700)
		case 3:
			err = os.Symlink(fmt.Sprintf("target-%d", rng.IntN(100)), p)
		case 4:
			err = syscall.Mkfifo(p, 0o600)
		case 5:
			var l net.Listener
			l, err = net.Listen("unix", p)
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%6 == 3 {
			continue // a link's own mode is not set
		}
		// The special bits too, as chmod(2) takes them (a plain user may not set setgid on a
		// file of another group, but the test's files are its own).
		bits := mode
		if rng.IntN(2) == 0 {
			bits |= os.ModeSetuid
		}
		if rng.IntN(2) == 0 {
			bits |= os.ModeSetgid
		}
		if rng.IntN(2) == 0 {
			bits |= os.ModeSticky
		}
		if err := os.Chmod(p, bits); err != nil {
			t.Fatal(err)
		}
		when := time.Unix(int64(rng.IntN(2_000_000_000)), int64(rng.IntN(1_000_000_000)))
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
}

// StatAt gives, for every kind of entry and mode bit, exactly what os.Lstat gives.
func TestStatAtIsLstat(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := t.TempDir()
			makeEntries(t, dir, rand.New(rand.NewPCG(seed, 7)))
			f, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ents, err := os.ReadDir(dir)
			if err != nil || len(ents) != 40 {
				t.Fatalf("%d entries, %v", len(ents), err)
			}
			for _, d := range ents {
				want, err := os.Lstat(filepath.Join(dir, d.Name()))
				if err != nil {
					t.Fatal(err)
				}
				got, err := StatAt(f, d.Name())
				if err != nil {
					t.Fatal(err)
				}
				if got.Name() != want.Name() || got.Size() != want.Size() || got.Mode() != want.Mode() ||
					!got.ModTime().Equal(want.ModTime()) || got.IsDir() != want.IsDir() ||
					!sameStat(got, want) {
					t.Errorf("%s: StatAt %v %d %v %v, os.Lstat %v %d %v %v", d.Name(), got.Mode(), got.Size(), got.ModTime(), got.Sys(), want.Mode(), want.Size(), want.ModTime(), want.Sys())
				}
			}
			if _, err := StatAt(f, "missing"); !os.IsNotExist(err) {
				t.Errorf("a missing name: %v", err)
			}
		})
	}
}

// A walk lists what filepath.WalkDir and os.Lstat list (outside .git, nothing ignored).
func TestParallelListsWhatLstatDoes(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 12 {
		sub := filepath.Join(root, fmt.Sprintf("d%d", i), fmt.Sprintf("s%d", rng.IntN(3)))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		makeEntries(t, sub, rng)
	}
	if err := os.MkdirAll(filepath.Join(root, ".git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileInfo{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		if rel != "." {
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			want[rel] = fi
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	got := Parallel(root, ignore.New(nil), &errs)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	var names []string
	for _, e := range got {
		names = append(names, e.Rel)
		w, ok := want[e.Rel]
		if !ok {
			t.Errorf("listed %s, which is not in the tree", e.Rel)
			continue
		}
		if e.Info.Mode() != w.Mode() || e.Info.Size() != w.Size() || !sameStat(e.Info, w) {
			t.Errorf("%s: %v %d, want %v %d", e.Rel, e.Info.Mode(), e.Info.Size(), w.Mode(), w.Size())
		}
	}
	sort.Strings(names)
	if len(got) != len(want) {
		t.Errorf("listed %d entries, the tree has %d", len(got), len(want))
	}
}

// A directory found in the walk and replaced since by a link is not followed (os.ReadDir
// followed it), and one replaced by a fifo is not waited on: the open fails at once. Only the
// root may be a link.
func TestReadDirOpensOnlyADirectory(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	fifo := filepath.Join(dir, "fifo")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if ents, _, err := readDir(link, false); err == nil {
			t.Errorf("a link in the walk was followed: %v", ents)
		}
		if _, _, err := readDir(fifo, false); err == nil {
			t.Error("a fifo opened as a directory")
		}
		if _, _, err := readDir(fifo, true); err == nil {
			t.Error("a fifo opened as the root")
		}
		ents, d, err := readDir(link, true)
		if err != nil || len(ents) != 1 {
			t.Errorf("the root through a link: %v %v", ents, err)
		}
		if d != nil {
			d.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("readDir waited on a fifo")
	}
}

// sameStat compares two stats but for the access time, which a directory's reading moves.
func sameStat(a, b fs.FileInfo) bool {
	x, y := *a.Sys().(*syscall.Stat_t), *b.Sys().(*syscall.Stat_t)
	x.Atim, y.Atim = syscall.Timespec{}, syscall.Timespec{}
	return reflect.DeepEqual(x, y)
}
