package atomicfile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A directory put at the target just before an unsynced write's swap is swapped back: the
// write fails as a rename over a directory does, and the directory keeps its name and content.
func TestSwapIntoNeverMovesADirectory(t *testing.T) {
	for _, empty := range []bool{true, false} {
		t.Run(fmt.Sprintf("empty=%v", empty), func(t *testing.T) {
			dir := t.TempDir()
			canSwap(t, dir)
			target := filepath.Join(dir, "f")
			p, err := Create(dir, "f", 0o644)
			if err != nil {
				t.Fatal(err)
			}
			p.SkipSync()
			p.swap = true // as WriteFileNoSync's
			if _, err := p.Write([]byte("new")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			if !empty {
				if err := os.WriteFile(filepath.Join(target, "inside"), []byte("kept"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err = p.Replace(target)
			if !errors.Is(err, syscall.EISDIR) {
				t.Fatalf("Replace over a directory: %v, want EISDIR", err)
			}
			if fi, err := os.Lstat(target); err != nil || !fi.IsDir() {
				t.Fatalf("the directory: %v %v", fi, err)
			}
			if !empty {
				if b, err := os.ReadFile(filepath.Join(target, "inside")); string(b) != "kept" {
					t.Fatalf("the directory's file: %q %v", b, err)
				}
			}
			if l := leftovers(t, dir); len(l) != 0 {
				t.Errorf("left behind: %v", l)
			}
		})
	}
}

// canSwap fails the test unless dir's filesystem swaps names: else the writes under test
// would take the plain rename and test nothing new.
func canSwap(t *testing.T, dir string) {
	t.Helper()
	a, b := filepath.Join(dir, "swap-a"), filepath.Join(dir, "swap-b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("the test directory's filesystem does not swap names (renameat2 RENAME_EXCHANGE: %v): run the test on ext4, XFS, btrfs or tmpfs", err)
	}
	for _, p := range []string{a, b} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

// The agent may change what is at a name while the runner writes it. Seeded: writes race a
// goroutine that puts a file, a link, a directory with a file in it, a fifo or nothing at the
// target. However they interleave, a write ends as the rename would: the new content at the
// target, or an error because a directory is there; the directory's file is never lost, the
// link's target never written, and no new file is left behind.
func TestSwapIntoRacesWhatIsAtTheTarget(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			canSwap(t, dir)
			victim := filepath.Join(outside, "victim")
			if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, "f")
			rng := rand.New(rand.NewPCG(seed, 33))
			stop := make(chan struct{})
			var moves atomic.Int64 // the agent's changes so far
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // the agent
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					next := filepath.Join(outside, fmt.Sprintf("next%d", i))
					switch rng.IntN(5) {
					case 0:
						_ = os.WriteFile(next, []byte("agent's"), 0o644)
					case 1:
						_ = os.Symlink(victim, next)
					case 2:
						if os.Mkdir(next, 0o755) == nil {
							_ = os.WriteFile(filepath.Join(next, "inside"), []byte("kept"), 0o644)
						}
					case 3:
						_ = syscall.Mkfifo(next, 0o644)
					case 4:
						next = ""
					}
					moves.Add(1)
					// Whatever is at the target goes aside (a directory is kept to be counted),
					// then the next thing takes its place.
					_ = os.Rename(target, filepath.Join(outside, fmt.Sprintf("aside%d", i)))
					if next != "" {
						_ = os.Rename(next, target)
					}
				}
			}()
			var errs []string
			deadline := time.Now().Add(20 * time.Second)
			for i := 0; i < 300 || (moves.Load() < 200 && time.Now().Before(deadline)); i++ {
				err := WriteFileNoSync(target, []byte(fmt.Sprintf("write %d", i)), 0o644, false)
				switch {
				case err == nil:
				case errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST):
					errs = append(errs, err.Error())
				default:
					t.Errorf("write %d: %v", i, err)
				}
			}
			close(stop)
			wg.Wait()
			if b, _ := os.ReadFile(victim); string(b) != "untouched" {
				t.Fatalf("written through the link: %q", b)
			}
			// A name left behind is one a write's error named (a race that changed the names
			// twice during one write).
			for _, l := range leftovers(t, dir) {
				if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "left at "+filepath.Join(dir, l)) }) {
					t.Errorf("left behind and not said: %s", l)
				}
			}
			// Every directory the agent made still has its file, at the target or aside.
			made, found := 0, 0
			for _, d := range []string{dir, outside} {
				ents, _ := os.ReadDir(d)
				for _, e := range ents {
					if !e.IsDir() {
						continue
					}
					made++
					if b, err := os.ReadFile(filepath.Join(d, e.Name(), "inside")); err == nil && string(b) == "kept" {
						found++
					}
				}
			}
			if moves.Load() < 200 {
				t.Fatalf("the agent changed the target %d times in 20 s", moves.Load())
			}
			if made == 0 || found != made {
				t.Errorf("%d directories, %d with their file", made, found)
			}
		})
	}
}
