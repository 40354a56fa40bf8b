package checkpoint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// forkCopy is what a fork does in the guest: cp -a of the origin, and the origin's objects
// hard-linked into the new store.
func forkCopy(t *testing.T, home, origin, copy string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", "--", origin+"/.", copy+"/").CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	objs := filepath.Join(home, BaseDir, "fork", "objects")
	if err := os.MkdirAll(objs, 0o700); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(home, BaseDir, "origin", "objects")
	names, _ := os.ReadDir(src)
	for _, n := range names {
		if err := os.Link(filepath.Join(src, n.Name()), filepath.Join(objs, n.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// forge rewrites p in place with other content of the same size, and puts its mtime back
// (touch -d): only ctime tells.
func forge(t *testing.T, p, data string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestForkFirstCheckpointReadsNothing forks a tree (now, and at a checkpoint) as Fork does and
// checks that the fork's first checkpoint reuses the hash of every file the origin's
// checkpoint vouches for, and reads the ones changed with a forged mtime: one in the origin
// after its checkpoint (before the copy), one in the copy after the fork.
func TestForkFirstCheckpointReadsNothing(t *testing.T) {
	for _, atCheckpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("at-checkpoint=%v", atCheckpoint), func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			origin := filepath.Join(t.TempDir(), "origin")
			copy := filepath.Join(t.TempDir(), "copy")
			const n = 50
			for i := range n {
				mustWrite(t, filepath.Join(origin, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%02d", i)), fmt.Sprintf("content %02d", i), 0o644)
			}
			old := time.Now().Add(-time.Hour)
			for i := range n {
				p := filepath.Join(origin, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%02d", i))
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}
			oreq := &runnerproto.CkptCreateRequest{Tree: runnerproto.CkptTree{Session: "origin", Root: origin}, Limits: raceLimits}
			c, err := Create(oreq, nil)
			if err != nil || c.Checkpoint == nil {
				t.Fatalf("origin checkpoint: %v %+v", err, c)
			}
			// The origin's agent changes a file after the checkpoint, keeping size and mtime.
			forge(t, filepath.Join(origin, "d1", "f01"), "CHANGED 01")
			if err := os.MkdirAll(copy, 0o700); err != nil {
				t.Fatal(err)
			}
			forkCopy(t, home, origin, copy)
			ftree := runnerproto.CkptTree{Session: "fork", Root: copy}
			if atCheckpoint {
				r, err := Restore(&runnerproto.CkptRestoreRequest{Tree: runnerproto.CkptTree{Session: "origin", Root: copy}, ID: c.Checkpoint.ID, MaxChanges: 100, CopiedFrom: origin, Seed: "fork"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("restore: %d changes, %d seeded", r.Total, r.Seeded)
				if r.Total != 1 || r.Seeded != n-1 {
					t.Errorf("restore changed %d paths (want 1: d1/f01 back) and seeded %d files (want %d)", r.Total, r.Seeded, n-1)
				}
			} else {
				r, err := Seed(&runnerproto.CkptSeedRequest{Tree: ftree, Origin: origin, OriginSession: "origin"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("seed: %+v", r)
				if r.Seeded != n-1 || r.Files != n || r.Checkpoint != c.Checkpoint.ID {
					t.Errorf("seeded %d of %d files from checkpoint %q, want %d of %d from %s", r.Seeded, r.Files, r.Checkpoint, n-1, n, c.Checkpoint.ID)
				}
			}
			// The copy changes after the fork, size and mtime kept.
			forge(t, filepath.Join(copy, "d2", "f02"), "CHANGED 02")
			f, err := Create(&runnerproto.CkptCreateRequest{Tree: ftree, Limits: raceLimits}, nil)
			if err != nil || f.Checkpoint == nil {
				t.Fatalf("fork's first checkpoint: %v %+v", err, f)
			}
			t.Logf("fork's first checkpoint: %d reused of %d files, %d bytes stored", f.Reused, f.Checkpoint.Files, f.Checkpoint.Stored)
			wantReused := n - 2 // all but d1/f01 (changed in the origin) and d2/f02 (in the copy)
			if f.Reused != wantReused {
				t.Errorf("the fork's first checkpoint reused %d hashes, want %d", f.Reused, wantReused)
			}
			// Its content is the copy's, file by file.
			s, _ := openCkptStore("fork", false, nil)
			m, err := s.readManifest(f.Checkpoint.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range m.Entries {
				if e.Type != tree.File {
					continue
				}
				b, err := os.ReadFile(filepath.Join(copy, string(e.Path)))
				if err != nil {
					t.Fatal(err)
				}
				if h := tree.Hash(b); h != e.Hash {
					t.Errorf("%s: checkpoint says %s, the copy holds %q (%s)", e.Path, e.Hash, b, h)
				}
			}
			if _, err := os.Lstat(s.seedPath()); !os.IsNotExist(err) {
				t.Errorf("the seed is still there after the first checkpoint: %v", err)
			}
		})
	}
}
