package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runner/checkpoint"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// damageKinds are the ways an object of the store gets damaged: a guest crash (missing, short),
// the agent's own edit (corrupted, or swapped for a symlink to the right content or for a
// directory).
var damageKinds = []string{"missing", "short", "corrupted", "symlink", "directory", "empty"}

// damageObject damages the object obj of a store one way.
func damageObject(t *testing.T, obj, kind, content string) {
	t.Helper()
	switch kind {
	case "missing":
		err := os.Remove(obj)
		if err != nil {
			t.Fatal(err)
		}
	case "short":
		if err := os.Truncate(obj, int64(len(content)/2)); err != nil {
			t.Fatal(err)
		}
	case "empty":
		if err := os.Truncate(obj, 0); err != nil {
			t.Fatal(err)
		}
	case "corrupted":
		b := []byte(content)
		b[len(b)/2] ^= 0x20
		if err := os.WriteFile(obj, b, 0o600); err != nil {
			t.Fatal(err)
		}
	case "symlink":
		// A link to a file holding the right content: still not the store's own object.
		elsewhere := filepath.Join(t.TempDir(), "right-content")
		if err := os.WriteFile(elsewhere, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(obj); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, obj); err != nil {
			t.Fatal(err)
		}
	case "directory":
		if err := os.Remove(obj); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(obj, 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointRestoreOfADamagedStoreChangesNothing is a generator: a tree is checkpointed,
// changed (so that the restore has removals, new directories and rewrites to make), and one
// random object of the checkpoint is damaged one random way. When the restore needs that
// object, it fails before it touches anything: the tree is exactly what it was (every entry's
// type, mode, link target and content), and the error says which content is damaged without
// advising to remove the store. When it does not need it (the file is unchanged in the tree),
// the restore succeeds and the tree is the checkpoint's.
func TestCheckpointRestoreOfADamagedStoreChangesNothing(t *testing.T) {
	forEachCkptRunner(t, func(t *testing.T, r *testRunner, home string) {
		for i := 0; i < 12; i++ {
			seed := int64(100 + i)
			if testing.Short() && i >= 4 {
				break
			}
			damagedRestore(t, r, home, seed, fmt.Sprint("dmg", i))
		}
	})
}

func damagedRestore(t *testing.T, r *testRunner, home string, seed int64, session string) {
	rng := rand.New(rand.NewSource(seed))
	root := filepath.Join(t.TempDir(), "proj")
	contents := map[string]string{}
	names := []string{"a.txt", "b.go", "d/c.txt", "d/e/f.txt", "g/h", "g/i/j.md", "k"}
	for _, n := range names {
		c := fmt.Sprintf("content of %s, seed %d: %s\n", n, seed, strings.Repeat("x", rng.Intn(300)))
		contents[n] = c
		mustWrite(t, filepath.Join(root, n), c, []os.FileMode{0o644, 0o755, 0o600}[rng.Intn(3)])
	}
	if err := os.Symlink("a.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tr := runnerproto.CkptTree{Session: session, Root: root}
	resp := r.call(t, &runnerproto.Request{CkptCreate: &runnerproto.CkptCreateRequest{Tree: tr, Label: "good", Limits: testCkptLimits}})
	if resp.CkptCreate == nil || resp.CkptCreate.Checkpoint == nil {
		t.Fatalf("checkpoint: %+v %s", resp.CkptCreate, resp.Error)
	}
	id := resp.CkptCreate.Checkpoint.ID
	atCheckpoint := snapshotTree(t, root)

	// The damaged object, and whether the restore needs it (its file was changed or removed).
	victim := names[rng.Intn(len(names))]
	needed := rng.Intn(4) != 0
	kind := damageKinds[rng.Intn(len(damageKinds))]
	// The tree moves on: every other file is rewritten or removed, new files and a directory
	// appear where the checkpoint has none, the link points elsewhere.
	for _, n := range names {
		if n == victim && !needed {
			continue
		}
		if n == victim || rng.Intn(2) == 0 {
			mustWrite(t, filepath.Join(root, n), "the agent's new work on "+n+"\n", 0o644)
		} else if err := os.Remove(filepath.Join(root, n)); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(root, "new/work.txt"), "new work\n", 0o644)
	mustWrite(t, filepath.Join(root, "d/new.txt"), "more new work\n", 0o600)
	os.Remove(filepath.Join(root, "link"))
	os.Symlink("b.go", filepath.Join(root, "link"))
	before := snapshotTree(t, root)

	sum := sha256.Sum256([]byte(contents[victim]))
	hash := hex.EncodeToString(sum[:])
	obj := filepath.Join(home, checkpoint.BaseDir, session, "objects", hash)
	damageObject(t, obj, kind, contents[victim])

	resp = r.call(t, &runnerproto.Request{CkptRestore: &runnerproto.CkptRestoreRequest{Tree: tr, ID: id, MaxChanges: 1000}})
	what := fmt.Sprintf("seed %d: object of %s %s (needed: %v)", seed, victim, kind, needed)
	if !needed {
		if resp.Error != "" || resp.CkptRestore == nil {
			t.Fatalf("%s: the restore failed: %s", what, resp.Error)
		}
		if d := diffSnapshots(atCheckpoint, snapshotTree(t, root)); d != "" {
			t.Fatalf("%s: after the restore the tree differs from the checkpoint:\n%s", what, d)
		}
		return
	}
	if resp.Error == "" {
		t.Fatalf("%s: the restore succeeded: %+v", what, resp.CkptRestore)
	}
	if d := diffSnapshots(before, snapshotTree(t, root)); d != "" {
		t.Fatalf("%s: the failed restore changed the tree (%s):\n%s", what, resp.Error, d)
	}
	if !strings.Contains(resp.Error, "damaged") || !strings.Contains(resp.Error, victim) || !strings.Contains(resp.Error, "was not changed") {
		t.Fatalf("%s: the error does not say what is damaged and that the copy was not changed: %s", what, resp.Error)
	}
	if strings.Contains(resp.Error, "remove") {
		t.Fatalf("%s: the error advises removing something: %s", what, resp.Error)
	}
	// Nothing of the restore is left in the tree's root either (its temporary directory).
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.Contains(e.Name(), "limactl-mcp") {
			t.Fatalf("%s: %s left in the tree", what, e.Name())
		}
	}
}
