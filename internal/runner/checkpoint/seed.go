package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// A fork's seed: what a forked session's store knows of its copy's content before its first
// checkpoint. A checkpoint reuses its previous checkpoint's hash for a file whose size, mtime,
// ctime and inode are unchanged; a fork's copy (`cp -a`) has new inodes and ctimes, and its
// store has no previous checkpoint, so without a seed the fork's first checkpoint reads and
// hashes every file again (51.7 s for 10,000 files on the test VM, storing nothing new).
//
// The seed is a manifest, SESSION/seed, that the store's first checkpoint uses as its previous
// one (and removes once it is written). Its hashes come only from what the runner checked:
//
//   - a file of the copy whose origin file is, after the copy, still exactly what the origin's
//     checkpoint read (size, mtime, ctime, inode: the rule by which the origin's own next
//     checkpoint trusts it; a write, a chmod or a replacement since moves ctime or the inode,
//     and no user can set ctime), and whose copy has the checkpoint's size and mtime (cp -a
//     keeps mtimes). The origin's agent may write its tree during the copy: a file it changed
//     at any moment between the checkpoint and the check has another ctime, so its copy is
//     left out of the seed and read by the first checkpoint;
//   - a file a restore found to hold the checkpoint's content (by its own identity, the rule
//     above, or by reading it).
//
// Each seeded file carries the copy's identity as it was walked, before any check read it: a
// change to the copy after that moves its ctime, and the first checkpoint reads the file. What
// this does not guard against is a writer of the new copy between the copy and the walk that
// forges the mtime (`touch -d`): the new session has no agent yet, and under the open network
// policy (the only one forks support) every agent is the runner's own user, which can write
// any session's store (and so its manifests) anyway.

// seedFile is the seed's name in a store.
const seedFile = "seed"

func (s *ckptStore) seedPath() string { return filepath.Join(s.dir, seedFile) }

// copiedUnchanged says whether c, a file of the copy as walked, holds checkpoint entry w's
// content because it is a `cp -a` copy of origin's file at w's path, unchanged since the
// checkpoint read it (see above).
func copiedUnchanged(origin *os.Root, w, c *ckptEntry) bool {
	if origin == nil || w.Type != tree.File || c.Type != tree.File || w.Ino == 0 || c.Size != w.Size || c.MTime != w.MTime {
		return false
	}
	fi, err := origin.Lstat(string(w.Path))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	ct, ino := statKey(fi)
	return fi.Size() == w.Size && fi.ModTime().UnixNano() == w.MTime && ct == w.CTime && ino == w.Ino
}

// writeSeed gives session's store its seed: the directories and symlinks of target (a
// checkpoint's entries), and those of its files that known holds (with the copy's identity
// and the checkpoint's hash). A store that has checkpoints already gets none (it has better).
// It returns the number of files seeded.
func writeSeed(session string, target []ckptEntry, known map[tree.Name]ckptEntry, cache *Cache) (int, error) {
	s, err := openCkptStore(session, true, cache)
	if err != nil {
		return 0, err
	}
	unlock, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	l, err := s.readList()
	if err != nil {
		return 0, err
	}
	if len(l.Checkpoints) > 0 {
		return 0, nil
	}
	m := &ckptManifest{Info: runnerproto.CkptInfo{ID: seedFile}, Entries: make([]ckptEntry, 0, len(target))}
	n := 0
	for _, e := range target {
		if e.Type == tree.File {
			k, ok := known[e.Path]
			if !ok {
				continue
			}
			k.Hash = e.Hash
			e = k
			n++
		}
		m.Entries = append(m.Entries, e)
	}
	info, err := json.Marshal(m.Info)
	if err != nil {
		return 0, err
	}
	if err := writeManifestAt(s.seedPath(), m, info); err != nil {
		return 0, fmt.Errorf("writing the fork's seed: %w", err)
	}
	return n, nil
}

// readSeed reads the store's seed, checked as a manifest is (nil: none, or one that does not
// make sense, which only means the first checkpoint reads every file).
func (s *ckptStore) readSeed(maxEntries int) *ckptManifest {
	b, err := readCapped(s.seedPath(), maxCkptManifest)
	if err != nil {
		return nil
	}
	m, err := parseManifest(bytes.NewReader(b), maxEntries)
	if err != nil || checkManifestEntries(m.Entries, maxEntries) != nil {
		return nil
	}
	return m
}

// Seed writes the seed of a fork made now (not at a checkpoint): the copy's files that are
// copies of origin files unchanged since the origin's newest checkpoint (CkptSeedRequest).
func Seed(req *runnerproto.CkptSeedRequest, cache *Cache) (*runnerproto.CkptSeedResult, error) {
	if req.OriginSession == req.Tree.Session {
		return nil, errors.New("a fork's seed is for another session's store than its origin's")
	}
	res := &runnerproto.CkptSeedResult{}
	o, err := openCkptStore(req.OriginSession, false, cache)
	if errors.Is(err, errNoCkptStore) {
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := o.newestManifest()
	if err != nil || m == nil {
		return res, err
	}
	walked, missing, err := walkCheckpointTree(&req.Tree)
	if err != nil {
		return nil, err
	}
	if missing {
		res.RootMissing = true
		return res, nil
	}
	origin, err := os.OpenRoot(req.Origin)
	if err != nil {
		return nil, fmt.Errorf("opening the fork's origin: %w", err)
	}
	defer origin.Close()
	want := make(map[tree.Name]*ckptEntry, len(m.Entries))
	for i := range m.Entries {
		want[m.Entries[i].Path] = &m.Entries[i]
	}
	known := map[tree.Name]ckptEntry{}
	for _, w := range walked {
		e, ok := describeWalked(req.Tree.Root, w)
		if !ok || e.Type != tree.File {
			continue
		}
		res.Files++
		if p := want[e.Path]; p != nil && copiedUnchanged(origin, p, &e) {
			known[e.Path] = e
		}
	}
	if res.Seeded, err = writeSeed(req.Tree.Session, m.Entries, known, cache); err != nil {
		return nil, err
	}
	res.Checkpoint = m.Info.ID
	return res, nil
}

// newestManifest reads the store's newest checkpoint's manifest (nil: no checkpoint).
func (s *ckptStore) newestManifest() (*ckptManifest, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	l, err := s.readList()
	if err != nil || len(l.Checkpoints) == 0 {
		return nil, err
	}
	return s.readManifest(l.Checkpoints[len(l.Checkpoints)-1].ID, 0)
}
