package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// The package's tests drive a runner over the protocol (internal/runner's ckpt*_test.go, against
// each runner binary); this one calls the package itself, to race many restores quickly.

var raceLimits = runnerproto.CkptLimits{MaxEntries: 10000, MaxStoreBytes: 64 << 20, MaxAuto: 2, MaxLabelled: 10}

func mustWrite(t *testing.T, p, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointRestoreRacesASwappedDirectory restores while another process keeps swapping a
// directory of the tree for a symlink to a directory outside it: whatever the restore meets,
// nothing is ever written outside the tree.
func TestCheckpointRestoreRacesASwappedDirectory(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	root := filepath.Join(t.TempDir(), "proj")
	outside := t.TempDir()
	for i := range 20 {
		mustWrite(t, filepath.Join(root, "d", fmt.Sprintf("f%02d", i)), fmt.Sprint("content ", i), 0o644)
	}
	tr := runnerproto.CkptTree{Session: "race", Root: root}
	cache := NewCache()
	c, err := Create(&runnerproto.CkptCreateRequest{Tree: tr, Limits: raceLimits}, cache)
	if err != nil || c.Checkpoint == nil {
		t.Fatalf("%v %+v", err, c)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		d, aside := filepath.Join(root, "d"), filepath.Join(root, "aside")
		for {
			select {
			case <-stop:
				return
			default:
			}
			// d becomes a link to outside, then a directory again.
			_ = os.Rename(d, aside)
			_ = os.Symlink(outside, d)
			_ = os.Remove(d)
			_ = os.Rename(aside, d)
			_ = os.RemoveAll(aside)
		}
	}()
	for range 200 {
		_, _ = Restore(&runnerproto.CkptRestoreRequest{Tree: tr, ID: c.Checkpoint.ID, MaxChanges: 10}, cache)
	}
	close(stop)
	<-done
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("the restore wrote outside the tree: %v", names)
	}
	// Once the swapping stops, a restore makes the tree whole again.
	if res, err := Restore(&runnerproto.CkptRestoreRequest{Tree: tr, ID: c.Checkpoint.ID, MaxChanges: 10}, cache); err != nil || res.Unknown {
		t.Fatalf("%v %+v", err, res)
	}
	for i := range 20 {
		if b, err := os.ReadFile(filepath.Join(root, "d", fmt.Sprintf("f%02d", i))); err != nil || string(b) != fmt.Sprint("content ", i) {
			t.Fatalf("d/f%02d after the last restore: %q %v", i, b, err)
		}
	}
}
