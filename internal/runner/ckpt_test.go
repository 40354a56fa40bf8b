package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runner/checkpoint"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Checkpoints, driven over the protocol as the host drives them, against each runner, each
// with a home of the test's own (where the store goes).

var testCkptLimits = runnerproto.CkptLimits{MaxEntries: 10000, MaxStoreBytes: 64 << 20, MaxAuto: 2, MaxLabelled: 10}

func forEachCkptRunner(t *testing.T, f func(t *testing.T, r *testRunner, home string)) {
	for _, kind := range runnerKinds {
		t.Run(kind, func(t *testing.T) {
			home := t.TempDir()
			var r *testRunner
			if kind == "in-process" {
				t.Setenv("HOME", home)
				r = startRunner(t, kind)
			} else {
				r = startRunnerWith(t, kind, runnerOpts{env: append(os.Environ(), "HOME="+home)})
			}
			f(t, r, home)
		})
	}
}

func ckptCreate(t *testing.T, r *testRunner, root, label string, auto bool) *runnerproto.CkptCreateResult {
	t.Helper()
	resp := r.call(t, &runnerproto.Request{CkptCreate: &runnerproto.CkptCreateRequest{Tree: runnerproto.CkptTree{Session: "s1", Root: root}, Label: label, Auto: auto, Limits: testCkptLimits}})
	if resp.CkptCreate == nil {
		t.Fatalf("checkpoint: %s", resp.Error)
	}
	return resp.CkptCreate
}

func ckptRestore(t *testing.T, r *testRunner, root, id string) (*runnerproto.CkptRestoreResult, string) {
	t.Helper()
	resp := r.call(t, &runnerproto.Request{CkptRestore: &runnerproto.CkptRestoreRequest{Tree: runnerproto.CkptTree{Session: "s1", Root: root}, ID: id, MaxChanges: 1000}})
	return resp.CkptRestore, resp.Error
}

// snapshotTree describes every entry below root but .git: type, mode, link target, content.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := uint32(fi.Sys().(*syscall.Stat_t).Mode) & 0o7777
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			out[rel] = "link " + tgt
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %o", mode)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = fmt.Sprintf("file %o %s", mode, hex.EncodeToString(sum[:8]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSnapshots(a, b map[string]string) string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %q → %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: extra %q", k, v))
		}
	}
	sort.Strings(d)
	return strings.Join(d, "\n")
}

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

func TestCheckpointRestoreExactTree(t *testing.T) {
	forEachCkptRunner(t, func(t *testing.T, r *testRunner, home string) {
		root := filepath.Join(t.TempDir(), "proj")
		outside := t.TempDir()
		mustWrite(t, filepath.Join(root, "main.go"), "package main\n", 0o644)
		mustWrite(t, filepath.Join(root, "run.sh"), "#!/bin/sh\necho hi\n", 0o755)
		mustWrite(t, filepath.Join(root, "d/sub/deep.txt"), "deep\n", 0o600)
		mustWrite(t, filepath.Join(root, "same1"), "same\n", 0o644)
		mustWrite(t, filepath.Join(root, "same2"), "same\n", 0o644)
		mustWrite(t, filepath.Join(root, ".git/HEAD"), "ref: refs/heads/main\n", 0o644)
		os.MkdirAll(filepath.Join(root, "empty"), 0o750)
		os.Symlink("main.go", filepath.Join(root, "link"))
		os.Symlink(outside, filepath.Join(root, "out"))
		before := snapshotTree(t, root)

		c := ckptCreate(t, r, root, "start", false)
		if c.Checkpoint == nil || c.Checkpoint.ID != "1" || c.Checkpoint.Label != "start" || c.Checkpoint.Files != 5 || c.Checkpoint.Symlinks != 2 || c.Checkpoint.Dirs != 3 {
			t.Fatalf("checkpoint: %+v", c.Checkpoint)
		}
		if c.Checkpoint.Stored != int64(len("package main\n")+len("#!/bin/sh\necho hi\n")+len("deep\n")+len("same\n")) {
			t.Errorf("stored %d bytes: identical files are stored once", c.Checkpoint.Stored)
		}
		// The same tree again costs nothing: every file is known by its identity.
		c2 := ckptCreate(t, r, root, "", false)
		if c2.Reused != 5 || c2.Checkpoint.Stored != 0 {
			t.Fatalf("second checkpoint reused %d, stored %d", c2.Reused, c2.Checkpoint.Stored)
		}

		// The agent breaks things.
		mustWrite(t, filepath.Join(root, "main.go"), "broken\n", 0o644)
		os.Remove(filepath.Join(root, "run.sh"))
		os.Chmod(filepath.Join(root, "same1"), 0o777)
		os.Remove(filepath.Join(root, "link"))
		os.Symlink("/etc/passwd", filepath.Join(root, "link"))
		mustWrite(t, filepath.Join(root, "newdir/x/y.txt"), "new\n", 0o644)
		os.RemoveAll(filepath.Join(root, "empty"))
		mustWrite(t, filepath.Join(root, "empty"), "now a file\n", 0o644)
		os.RemoveAll(filepath.Join(root, "d/sub"))
		os.Symlink(outside, filepath.Join(root, "d/sub")) // a write below d/sub must not land outside
		os.Chmod(filepath.Join(root, "d"), 0o500)
		mustWrite(t, filepath.Join(root, ".git/HEAD"), "ref: refs/heads/other\n", 0o644)

		res, errText := ckptRestore(t, r, root, "1")
		if errText != "" {
			t.Fatal(errText)
		}
		if got := diffSnapshots(before, snapshotTree(t, root)); got != "" {
			t.Fatalf("the tree after the restore differs:\n%s", got)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Fatalf("the restore wrote outside the tree: %v", ents)
		}
		if b, _ := os.ReadFile(filepath.Join(root, ".git/HEAD")); string(b) != "ref: refs/heads/other\n" {
			t.Errorf(".git was touched: %q", b)
		}
		kinds := map[string]string{}
		for _, ch := range res.Changes {
			kinds[string(ch.Path)] = ch.Kind
		}
		for p, k := range map[string]string{"main.go": "content", "run.sh": "created", "same1": "mode", "link": "symlink", "newdir": "removed", "empty": "type", "d/sub": "type"} {
			if kinds[p] != k {
				t.Errorf("change of %s: %q, want %q (all: %v)", p, kinds[p], k, kinds)
			}
		}
		// A restore of the restored tree changes nothing.
		if res, _ := ckptRestore(t, r, root, "1"); res.Total != 0 {
			t.Errorf("a second restore changed %v", res.Changes)
		}
		// An unknown id says so and changes nothing.
		if res, _ := ckptRestore(t, r, root, "99"); !res.Unknown {
			t.Errorf("unknown id: %+v", res)
		}
		resp := r.call(t, &runnerproto.Request{CkptList: &runnerproto.CkptListRequest{Session: "s1"}})
		if l := resp.CkptList; l == nil || len(l.Checkpoints) != 2 || l.Checkpoints[0].Label != "start" {
			t.Fatalf("list: %+v %s", resp.CkptList, resp.Error)
		}
	})
}

// TestCheckpointRandomRoundTrips checkpoints a tree after each round of random mutations, then
// restores every checkpoint in a random order and compares with what the tree was.
func TestCheckpointRandomRoundTrips(t *testing.T) {
	forEachCkptRunner(t, func(t *testing.T, r *testRunner, home string) {
		for seed := int64(15); seed < 20; seed++ {
			randomRoundTrips(t, r, seed)
		}
	})
}

func randomRoundTrips(t *testing.T, r *testRunner, seed int64) {
	t.Helper()
	{
		rng := rand.New(rand.NewSource(seed))
		root := filepath.Join(t.TempDir(), "proj")
		os.MkdirAll(root, 0o755)
		snaps := map[string]map[string]string{}
		var ids []string
		for round := 0; round < 6; round++ {
			for i := 0; i < 12; i++ {
				mutate(t, rng, root)
			}
			c := ckptCreate(t, r, root, fmt.Sprint("round ", round), false)
			if c.Checkpoint == nil {
				t.Fatalf("round %d: %+v", round, c)
			}
			snaps[c.Checkpoint.ID] = snapshotTree(t, root)
			ids = append(ids, c.Checkpoint.ID)
		}
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		for _, id := range ids {
			for i := 0; i < 8; i++ {
				mutate(t, rng, root)
			}
			if res, e := ckptRestore(t, r, root, id); e != "" || res.Unknown {
				t.Fatalf("seed %d, restore %s: %s", seed, id, e)
			}
			if d := diffSnapshots(snaps[id], snapshotTree(t, root)); d != "" {
				t.Fatalf("seed %d: after restoring %s the tree differs:\n%s", seed, id, d)
			}
		}
	}
}

// mutate makes one random change to the tree: a new or edited file, a removal, a chmod, a
// symlink, a directory, or an entry of another type where one was. Every change goes through
// an os.Root of the tree: the tree holds symlinks to /etc and to its parent, and these tests
// run as root, so a plain os.Chmod or os.WriteFile through one would change the host itself.
func mutate(t *testing.T, rng *rand.Rand, root string) {
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	names := []string{"a", "b", "c.txt", "d/e", "d/f.go", "d/g/h", "x/y/z", "link", "d/l"}
	p := names[rng.Intn(len(names))]
	r.MkdirAll(filepath.Dir(p), 0o755)
	switch rng.Intn(7) {
	case 0, 1:
		if fi, err := r.Lstat(p); err == nil && !fi.Mode().IsRegular() {
			r.RemoveAll(p)
		}
		r.WriteFile(p, []byte(fmt.Sprint("content ", rng.Intn(5), "\n")), 0o644)
	case 2:
		r.RemoveAll(p)
	case 3:
		r.Chmod(p, []os.FileMode{0o600, 0o755, 0o700, 0o644}[rng.Intn(4)])
	case 4:
		r.RemoveAll(p)
		r.Symlink([]string{"a", "../b", "/etc", "d"}[rng.Intn(4)], p)
	case 5:
		r.RemoveAll(p)
		r.MkdirAll(p, 0o755)
	case 6:
		r.Chmod(filepath.Dir(p), []os.FileMode{0o755, 0o700, 0o555}[rng.Intn(3)])
	}
	// Keep every directory readable by the test's own walk (WalkDir does not follow links).
	filepath.WalkDir(root, func(q string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			if fi, err := os.Lstat(q); err == nil && fi.IsDir() && fi.Mode().Perm()&0o500 != 0o500 {
				rel, _ := filepath.Rel(root, q)
				r.Chmod(rel, fi.Mode().Perm()|0o500)
			}
		}
		return nil
	})
}

func TestCheckpointHostileStore(t *testing.T) {
	forEachCkptRunner(t, func(t *testing.T, r *testRunner, home string) {
		root := filepath.Join(t.TempDir(), "proj")
		mustWrite(t, filepath.Join(root, "f"), "original\n", 0o644)
		c := ckptCreate(t, r, root, "", false)
		store := filepath.Join(home, checkpoint.BaseDir, "s1")
		sum := sha256.Sum256([]byte("original\n"))
		obj := filepath.Join(store, "objects", hex.EncodeToString(sum[:]))

		// An object whose content is not what its name says is refused, and the file stays.
		os.Chmod(obj, 0o600)
		os.WriteFile(obj, []byte("evil!!!!!\n"), 0o600)
		mustWrite(t, filepath.Join(root, "f"), "agent's\n", 0o644)
		if _, e := ckptRestore(t, r, root, c.Checkpoint.ID); !strings.Contains(e, "damaged") {
			t.Fatalf("restore from a forged object: %q", e)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "f")); string(b) != "agent's\n" {
			t.Fatalf("a forged object was written: %q", b)
		}

		// A manifest with a path out of the tree is refused before anything is written.
		f, _ := os.Create(filepath.Join(store, "manifests", c.Checkpoint.ID))
		fmt.Fprintf(f, "%s\ninfo {\"id\":%q}\nf 644 9 0 0 0 %s \"../escape\"\n", checkpoint.ManifestHeader, c.Checkpoint.ID, hex.EncodeToString(sum[:]))
		f.Close()
		if _, e := ckptRestore(t, r, root, c.Checkpoint.ID); !strings.Contains(e, "damaged") || !strings.Contains(e, "bad path") {
			t.Fatalf("restore from a manifest with ../: %q", e)
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(root), "escape")); err == nil {
			t.Fatal("the restore wrote outside the tree")
		}
		// A manifest that is not one, or is cut, is an error, not a panic.
		for _, text := range []string{"{}", checkpoint.ManifestHeader + "\ninfo {\"id\":\"1\"}\nf 644", checkpoint.ManifestHeader + "\ninfo {\"id\":\"1\"}\nl \"a\" \"unterminated"} {
			os.WriteFile(filepath.Join(store, "manifests", c.Checkpoint.ID), []byte(text), 0o600)
			if _, e := ckptRestore(t, r, root, c.Checkpoint.ID); !strings.Contains(e, "damaged") {
				t.Fatalf("restore from manifest %q: %q", text, e)
			}
		}
		// A list that is not JSON is an error, not a panic.
		os.WriteFile(filepath.Join(store, "list.json"), []byte("{nonsense"), 0o600)
		resp := r.call(t, &runnerproto.Request{CkptList: &runnerproto.CkptListRequest{Session: "s1"}})
		if !strings.Contains(resp.Error, "damaged") {
			t.Fatalf("list of a damaged store: %+v", resp)
		}
		// A session name cannot lead out of the store.
		resp = r.call(t, &runnerproto.Request{CkptList: &runnerproto.CkptListRequest{Session: "../x"}})
		if resp.Error == "" {
			t.Fatal("a session of ../x was accepted")
		}
	})
}

func TestCheckpointLimits(t *testing.T) {
	forEachCkptRunner(t, func(t *testing.T, r *testRunner, home string) {
		root := filepath.Join(t.TempDir(), "proj")
		mustWrite(t, filepath.Join(root, "f"), "v0", 0o644)
		// Automatic checkpoints beyond MaxAuto are pruned, oldest first, with their objects.
		var last *runnerproto.CkptCreateResult
		for i := 1; i <= 4; i++ {
			mustWrite(t, filepath.Join(root, "f"), fmt.Sprint("v", i), 0o644)
			last = ckptCreate(t, r, root, "", true)
		}
		if len(last.Pruned) != 1 || last.Pruned[0] != "2" {
			t.Fatalf("pruned %v", last.Pruned)
		}
		// Their content goes within checkpoint.GCEvery prunes.
		objects := func() int {
			ents, _ := os.ReadDir(filepath.Join(home, checkpoint.BaseDir, "s1", "objects"))
			return len(ents)
		}
		for i := 5; i <= 2+checkpoint.GCEvery; i++ {
			if n := objects(); n > testCkptLimits.MaxAuto+checkpoint.GCEvery {
				t.Fatalf("%d objects kept after %d checkpoints", n, i-1)
			}
			mustWrite(t, filepath.Join(root, "f"), fmt.Sprint("v", i), 0o644)
			last = ckptCreate(t, r, root, "", true)
		}
		if n := objects(); n != 2 {
			t.Fatalf("%d objects kept after a collection, want 2", n)
		}
		// A checkpoint that does not fit in the store is refused, and says so.
		big := strings.Repeat("x", 1000)
		mustWrite(t, filepath.Join(root, "big"), big, 0o644)
		lim := testCkptLimits
		lim.MaxStoreBytes = 500
		resp := r.call(t, &runnerproto.Request{CkptCreate: &runnerproto.CkptCreateRequest{Tree: runnerproto.CkptTree{Session: "s1", Root: root}, Limits: lim}})
		if resp.CkptCreate == nil || !resp.CkptCreate.StoreFull || resp.CkptCreate.Checkpoint != nil {
			t.Fatalf("over the store's size: %+v %s", resp.CkptCreate, resp.Error)
		}
		lim.MaxEntries = 1
		resp = r.call(t, &runnerproto.Request{CkptCreate: &runnerproto.CkptCreateRequest{Tree: runnerproto.CkptTree{Session: "s1", Root: root}, Limits: lim}})
		if resp.CkptCreate == nil || !resp.CkptCreate.TooManyEntries {
			t.Fatalf("over the entries: %+v %s", resp.CkptCreate, resp.Error)
		}
		resp = r.call(t, &runnerproto.Request{CkptCreate: &runnerproto.CkptCreateRequest{Tree: runnerproto.CkptTree{Session: "s1", Root: root}}})
		if resp.Error == "" {
			t.Fatal("a request without limits was accepted")
		}
	})
}
