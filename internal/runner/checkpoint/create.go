package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// GCEvery is how many checkpoints are pruned before the content only they referred to is
// collected.
const GCEvery = 8

// checkCkptLimits refuses limits that would not bound the store.
func checkCkptLimits(l runnerproto.CkptLimits) error {
	if l.MaxEntries < 1 || l.MaxEntries > ckptHardMaxEntry || l.MaxStoreBytes < 1 || l.MaxAuto < 1 || l.MaxAuto > 1000 || l.MaxLabelled < 1 || l.MaxLabelled > 1000 {
		return fmt.Errorf("checkpoint limits %+v out of range", l)
	}
	return nil
}

// Create takes a checkpoint: it walks the tree, reuses the previous checkpoint's hash (a
// fork's seed's, before the first) for every file whose size, mtime, ctime and inode are
// unchanged (and whose object is still there), copies the content of the others into the store, then writes the manifest and the
// list, pruning the oldest checkpoints beyond the limits.
func Create(req *runnerproto.CkptCreateRequest, cache *Cache) (*runnerproto.CkptCreateResult, error) {
	if err := checkCkptLimits(req.Limits); err != nil {
		return nil, err
	}
	if len(req.Label) > maxCkptLabel {
		return nil, fmt.Errorf("a checkpoint label has at most %d bytes", maxCkptLabel)
	}
	s, err := openCkptStore(req.Tree.Session, true, cache)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	l, err := s.readList()
	if err != nil {
		return nil, err
	}
	res := &runnerproto.CkptCreateResult{StoreBytes: l.StoreBytes}
	walkedTree, missing, err := walkCheckpointTree(&req.Tree)
	if err != nil {
		return nil, err
	}
	if missing {
		res.RootMissing = true
		return res, nil
	}
	if len(walkedTree) > req.Limits.MaxEntries {
		res.TooManyEntries = true
		return res, nil
	}
	// What the newest checkpoint knows, by path; before the first, a fork's seed (seed.go).
	prev := map[tree.Name]*ckptEntry{}
	var known *ckptManifest
	if n := len(l.Checkpoints); n > 0 {
		known, _ = s.readManifest(l.Checkpoints[n-1].ID, req.Limits.MaxEntries)
	} else {
		known = s.readSeed(req.Limits.MaxEntries)
	}
	if known != nil { // a damaged previous manifest only means every file is read again
		for i := range known.Entries {
			prev[known.Entries[i].Path] = &known.Entries[i]
		}
	}
	objects, err := s.objectNames()
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(req.Tree.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()

	info := runnerproto.CkptInfo{ID: strconv.Itoa(l.Next), Label: req.Label, Auto: req.Auto, TimeMillis: time.Now().UnixMilli()}
	m := &ckptManifest{Entries: make([]ckptEntry, 0, len(walkedTree))}
	var stored int64
	var newObjects []string
	for _, w := range walkedTree {
		e, ok := describeWalked(req.Tree.Root, w)
		if !ok {
			res.Skipped = append(res.Skipped, tree.Name(w.Rel))
			continue
		}
		switch e.Type {
		case tree.File:
			if p := prev[e.Path]; p != nil && p.Type == tree.File && p.Size == e.Size && p.MTime == e.MTime && p.CTime == e.CTime && p.Ino == e.Ino && p.Ino != 0 && objects[p.Hash] {
				e.Hash = p.Hash
				res.Reused++
			} else {
				n, err := s.storeObject(root, &e, objects)
				if errors.Is(err, errVanished) {
					res.Skipped = append(res.Skipped, e.Path)
					continue
				}
				if err != nil {
					s.removeObjects(newObjects)
					return nil, fmt.Errorf("checkpointing %s: %w", w.Rel, err)
				}
				if n > 0 {
					newObjects = append(newObjects, e.Hash)
					stored += n
				}
			}
			info.Files++
			info.Bytes += e.Size
		case tree.Dir:
			info.Dirs++
		case tree.Symlink:
			info.Symlinks++
		}
		m.Entries = append(m.Entries, e)
	}
	info.Stored = stored
	m.Info = info

	l.Checkpoints = append(l.Checkpoints, info)
	l.Next++
	l.StoreBytes += stored
	pruned := pruneList(l, req.Limits)
	l.PrunedSinceGC += len(pruned)
	// The content only pruned checkpoints referred to is removed now and then, not at every
	// prune: a collection reads every kept manifest. So at most GCEvery checkpoints' worth
	// of stale content waits, and the store's size counts it until then.
	if l.PrunedSinceGC >= GCEvery || l.StoreBytes > req.Limits.MaxStoreBytes {
		size, err := s.collectGarbageWith(l, m)
		if err != nil {
			return nil, err
		}
		l.StoreBytes, l.PrunedSinceGC = size, 0
	}
	// Automatic checkpoints go first, oldest first, until the store fits.
	for l.StoreBytes > req.Limits.MaxStoreBytes {
		id := oldestAuto(l, info.ID)
		if id == "" {
			break
		}
		pruned = append(pruned, id)
		removeFromList(l, id)
		size, err := s.collectGarbageWith(l, m)
		if err != nil {
			return nil, err
		}
		l.StoreBytes = size
	}
	if l.StoreBytes > req.Limits.MaxStoreBytes {
		removeFromList(l, info.ID)
		if size, err := s.collectGarbage(l); err == nil {
			l.StoreBytes = size
		}
		res.StoreFull = true
		res.StoreBytes = l.StoreBytes
		res.Pruned = pruned
		return res, s.writeList(l)
	}
	if err := s.writeManifest(m); err != nil {
		s.removeObjects(newObjects)
		return nil, fmt.Errorf("writing the checkpoint's manifest: %w", err)
	}
	if err := s.writeList(l); err != nil {
		return nil, fmt.Errorf("writing the checkpoint list: %w", err)
	}
	_ = os.Remove(s.seedPath()) // the checkpoint knows better now
	for _, id := range pruned {
		_ = os.Remove(s.manifestPath(id))
	}
	s.cache.putObjectNames(s.objectDir(), objects)
	res.Checkpoint = &info
	res.Pruned = pruned
	res.StoreBytes = l.StoreBytes
	return res, nil
}

// collectGarbageWith is collectGarbage while checkpoint m is being taken (listed, not yet
// written): its objects are kept.
func (s *ckptStore) collectGarbageWith(l *ckptList, m *ckptManifest) (int64, error) {
	used, err := s.objectsUsed(l, m.Info.ID)
	if err != nil {
		return 0, err
	}
	addObjects(used, m)
	return s.sweepObjects(used)
}

// pruneList drops the oldest checkpoints beyond the limits on their number.
func pruneList(l *ckptList, lim runnerproto.CkptLimits) []string {
	var pruned []string
	for _, auto := range []bool{true, false} {
		max := lim.MaxLabelled
		if auto {
			max = lim.MaxAuto
		}
		n := 0
		for _, c := range l.Checkpoints {
			if c.Auto == auto {
				n++
			}
		}
		for _, c := range append([]runnerproto.CkptInfo(nil), l.Checkpoints...) {
			if n <= max {
				break
			}
			if c.Auto == auto {
				pruned = append(pruned, c.ID)
				removeFromList(l, c.ID)
				n--
			}
		}
	}
	return pruned
}

func oldestAuto(l *ckptList, except string) string {
	for _, c := range l.Checkpoints {
		if c.Auto && c.ID != except {
			return c.ID
		}
	}
	return ""
}

func removeFromList(l *ckptList, id string) {
	kept := l.Checkpoints[:0]
	for _, c := range l.Checkpoints {
		if c.ID != id {
			kept = append(kept, c)
		}
	}
	l.Checkpoints = kept
}

func (s *ckptStore) removeObjects(hashes []string) {
	for _, h := range hashes {
		_ = os.Remove(filepath.Join(s.objectDir(), h))
	}
}

// errVanished says a file changed into something else, or went, while it was read.
var errVanished = errors.New("the file vanished while it was read")

// storeObject copies a file's content into the store while hashing it, and sets e.Hash, size
// and identity from what was read (the file may have changed since the walk). It returns the
// bytes added to the store (0 when the content was there already).
func (s *ckptStore) storeObject(root *os.Root, e *ckptEntry, objects map[string]bool) (int64, error) {
	f, err := root.OpenFile(string(e.Path), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			return 0, errVanished
		}
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, errVanished
	}
	e.Size, e.MTime = fi.Size(), fi.ModTime().UnixNano()
	e.CTime, e.Ino = statKey(fi)
	// The object is named by its content, known once it is written (internal/atomicfile).
	out, err := atomicfile.Create(s.objectDir(), "object", 0o400)
	if err != nil {
		return 0, err
	}
	defer out.Discard()
	out.SkipSync() // a checkpoint stores thousands of objects: an fsync each would cost seconds
	h := tree.NewHasher()
	n, err := io.Copy(io.MultiWriter(out, h), f)
	if err != nil {
		return 0, err
	}
	e.Size = n // what was read is what the object holds
	e.Hash = h.Sum()
	if objects[e.Hash] {
		return 0, nil
	}
	if err := out.Replace(filepath.Join(s.objectDir(), e.Hash)); err != nil {
		return 0, err
	}
	objects[e.Hash] = true
	return n, nil
}
