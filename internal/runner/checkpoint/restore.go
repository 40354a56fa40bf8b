package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/runner/walk"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Restore makes the tree exactly what a checkpoint holds: entries it does not have are
// removed, files whose content differs are rewritten from the store (a new file renamed into
// place), and modes, symlinks and directories are put back. Every change goes through an
// os.Root of the tree, so no symlink (the agent's, or one swapped in meanwhile) leads a write
// outside it; paths with a .git component and what the ignore rules skip are left alone.
//
// It is all or nothing as far as the store goes: the content of every file to be rewritten is
// first copied out of the store into a directory of the tree's own and checked there (present,
// a regular file, its size and hash the manifest's), before the first change; a store that
// lacks or spoils one (a guest crash, the agent's edit) fails the restore with the tree as it
// was. What can still stop it part way is the tree itself refusing a change (a full disk, the
// agent changing it meanwhile); the error then says so.
func Restore(req *runnerproto.CkptRestoreRequest, cache *Cache) (*runnerproto.CkptRestoreResult, error) {
	s, err := openCkptStore(req.Tree.Session, false, cache)
	if errors.Is(err, errNoCkptStore) {
		return &runnerproto.CkptRestoreResult{Unknown: true, Changes: []runnerproto.CkptChange{}}, nil
	}
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
	res := &runnerproto.CkptRestoreResult{Changes: []runnerproto.CkptChange{}}
	if !listed(l, req.ID) {
		res.Unknown = true
		return res, nil
	}
	m, err := s.readManifest(req.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s cannot be restored: %w; the guest copy was not changed", req.ID, err)
	}
	cur, missing, err := walkCheckpointTree(&req.Tree)
	if err != nil {
		return nil, err
	}
	if missing {
		res.RootMissing = true
		return res, nil
	}
	root, err := os.OpenRoot(req.Tree.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	r := &restorer{root: root, store: s, dry: req.DryRun, max: req.MaxChanges, res: res}
	if req.CopiedFrom != "" {
		// A fork's copy: its files copied from origin files unchanged since the checkpoint
		// are known without reading them (seed.go). No origin, no shortcut.
		if origin, err := os.OpenRoot(req.CopiedFrom); err == nil {
			defer origin.Close()
			r.origin = origin
		}
	}
	if req.Seed != "" && !req.DryRun {
		if req.Seed == req.Tree.Session {
			return nil, errors.New("a restore seeds another session's store than the one it restores from")
		}
		r.known = map[tree.Name]ckptEntry{}
	}
	if err := r.run(m.Entries, cur, req.Tree.Root); err != nil {
		if !r.touched {
			return nil, fmt.Errorf("checkpoint %s cannot be restored: %w; the guest copy was not changed", req.ID, err)
		}
		return nil, fmt.Errorf("restoring checkpoint %s stopped part way: %w; the guest copy is partly restored", req.ID, err)
	}
	if r.known != nil {
		// The restore is done whatever becomes of the seed: without one, the new session's
		// first checkpoint reads every file.
		res.Seeded, _ = writeSeed(req.Seed, m.Entries, r.known, r.store.cache)
	}
	return res, nil
}

func listed(l *ckptList, id string) bool {
	for _, c := range l.Checkpoints {
		if c.ID == id {
			return true
		}
	}
	return false
}

type restorer struct {
	root  *os.Root
	store *ckptStore
	dry   bool
	max   int
	res   *runnerproto.CkptRestoreResult
	kinds map[tree.Name]string // the change recorded for a path, so that it is listed once
	// touched is set before the first change to the tree (its root's temporary directory
	// aside): an error before it leaves the tree as it was.
	touched bool
	cleanup []func()
	// origin is the tree a fork's copy was made from (nil: none); known, when a seed is to be
	// written, collects the files found to hold their checkpoint content (with their identity
	// as walked).
	origin *os.Root
	known  map[tree.Name]ckptEntry
}

func (r *restorer) record(p tree.Name, kind string) {
	if r.kinds == nil {
		r.kinds = map[tree.Name]string{}
	}
	if _, ok := r.kinds[p]; ok {
		return
	}
	r.kinds[p] = kind
	r.res.Total++
	if len(r.res.Changes) < r.max {
		r.res.Changes = append(r.res.Changes, runnerproto.CkptChange{Path: p, Kind: kind})
	}
}

func (r *restorer) run(target []ckptEntry, walkedNow []walk.Entry, rootPath string) error {
	want := make(map[tree.Name]*ckptEntry, len(target))
	for i := range target {
		want[target[i].Path] = &target[i]
	}
	now := make(map[tree.Name]ckptEntry, len(walkedNow))
	for _, w := range walkedNow {
		if e, ok := describeWalked(rootPath, w); ok {
			now[e.Path] = e
		} else {
			now[tree.Name(w.Rel)] = ckptEntry{Entry: tree.Entry{Path: tree.Name(w.Rel), Type: tree.Other}}
		}
	}
	// 0. The files whose content is to be written, and that content, out of the store and
	// checked, before anything changes. A file of the tree that is a file of the checkpoint
	// keeps its place through step 1 (its parent is a directory in both), so "same" is final.
	same := map[tree.Name]bool{}
	var writes []*ckptEntry
	for i := range target {
		w := &target[i]
		if w.Type != tree.File {
			continue
		}
		if c, ok := now[w.Path]; ok && c.Type == tree.File {
			if s, err := r.sameContent(w, &c); err != nil {
				return err
			} else if s {
				same[w.Path] = true
				if r.known != nil && c.Mode == w.Mode {
					r.known[w.Path] = c
				}
				continue
			}
		}
		writes = append(writes, w)
	}
	if fi, err := r.root.Lstat("."); err == nil && fi.Mode().Perm()&0o700 != 0o700 && !r.dry {
		if err := r.root.Chmod(".", fi.Mode().Perm()|0o700); err == nil {
			defer func() { _ = r.root.Chmod(".", fi.Mode().Perm()) }()
		}
	}
	defer r.done() // before the root's mode is put back
	staged, err := r.stageContents(writes)
	if err != nil {
		return err
	}
	r.touched = !r.dry
	// Directories the user may not write (the agent's chmod) are opened up first; their own
	// mode is put back at the end.
	for _, w := range walkedNow {
		if e := now[tree.Name(w.Rel)]; e.Type == tree.Dir && e.Mode&0o700 != 0o700 && !r.dry {
			if err := r.root.Chmod(w.Rel, atomicfile.ModeOf(e.Mode|0o700)); err != nil {
				return fmt.Errorf("opening %s for the restore: %w", w.Rel, err)
			}
		}
	}
	// 1. Remove what the checkpoint does not have, or has as another kind of entry: deepest
	// first, and nothing below a directory already removed whole.
	gone := map[tree.Name]bool{}
	paths := make([]string, 0, len(now))
	for p := range now {
		paths = append(paths, string(p))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(paths)))
	var removedDirs []string
	for _, p := range paths {
		if under(p, removedDirs) {
			continue
		}
		c, w := now[tree.Name(p)], want[tree.Name(p)]
		kind := ""
		switch {
		case w == nil:
			kind = runnerproto.CkptRemoved
		case w.Type != c.Type:
			kind = runnerproto.CkptRetyped
		case w.Type == tree.Symlink && w.Target != c.Target:
			kind = runnerproto.CkptRelinked
		default:
			continue
		}
		r.record(tree.Name(p), kind)
		gone[tree.Name(p)] = true
		if r.dry {
			continue
		}
		var err error
		if c.Type == tree.Dir {
			err = r.root.RemoveAll(p)
			removedDirs = append(removedDirs, p)
		} else {
			err = r.root.Remove(p)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", p, err)
		}
	}
	// 2. Put back every entry of the checkpoint, parents first.
	var dirModes []*ckptEntry
	for i := range target {
		w := &target[i]
		c, exists := now[w.Path]
		exists = exists && !gone[w.Path] && !under(string(w.Path), removedDirs)
		p := string(w.Path)
		switch w.Type {
		case tree.Dir:
			if !exists {
				r.record(w.Path, runnerproto.CkptCreated)
				if !r.dry {
					if err := r.root.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
						return fmt.Errorf("making directory %s: %w", p, err)
					}
				}
			} else if c.Mode != w.Mode {
				r.record(w.Path, runnerproto.CkptMode)
			}
			dirModes = append(dirModes, w)
		case tree.Symlink:
			if !exists {
				r.record(w.Path, runnerproto.CkptCreated)
				if !r.dry {
					if err := r.root.Symlink(string(w.Target), p); err != nil {
						return fmt.Errorf("making symlink %s: %w", p, err)
					}
				}
			}
		case tree.File:
			isSame := same[w.Path]
			switch {
			case !exists:
				r.record(w.Path, runnerproto.CkptCreated)
			case !isSame:
				r.record(w.Path, runnerproto.CkptContent)
			case c.Mode != w.Mode:
				r.record(w.Path, runnerproto.CkptMode)
			}
			if r.dry {
				continue
			}
			if !isSame {
				if err := r.root.Rename(staged[w.Path], p); err != nil {
					return fmt.Errorf("restoring %s: %w", p, err)
				}
			} else if c.Mode != w.Mode {
				if err := r.root.Chmod(p, atomicfile.ModeOf(w.Mode)); err != nil {
					return fmt.Errorf("setting the mode of %s: %w", p, err)
				}
			}
		}
	}
	if r.dry {
		return nil
	}
	// 3. Directory modes last, deepest first, so that a read-only directory is filled first.
	for i := len(dirModes) - 1; i >= 0; i-- {
		d := dirModes[i]
		if err := r.root.Chmod(string(d.Path), atomicfile.ModeOf(d.Mode)); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", d.Path, err)
		}
	}
	return nil
}

// stageContents copies the content of every file in writes out of the store into a new
// directory at the tree's root (so that each is later renamed into place on the same file
// system), each checked against the size and hash its manifest entry names, and returns where
// each is. The directory's removal is registered on r (r.done). A dry run only checks. Any
// error leaves the tree as it was.
func (r *restorer) stageContents(writes []*ckptEntry) (map[tree.Name]string, error) {
	staged := make(map[tree.Name]string, len(writes))
	if r.dry {
		for _, w := range writes {
			if err := r.copyObject(w, io.Discard); err != nil {
				return nil, err
			}
		}
		return staged, nil
	}
	if len(writes) == 0 {
		return staged, nil
	}
	dir := ".limactl-mcp-restore-" + randomHex()
	if err := r.root.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making the restore's temporary directory in the guest copy: %w", err)
	}
	r.cleanup = append(r.cleanup, func() { _ = r.root.RemoveAll(dir) })
	for i, w := range writes {
		// A new file of the root (internal/atomicfile), renamed into place in step 2.
		f, err := atomicfile.CreateIn(r.root, dir, strconv.Itoa(i), 0o600)
		if err != nil {
			r.done()
			return nil, fmt.Errorf("restoring %s: %w", w.Path, err)
		}
		f.SkipSync() // as a checkpoint's objects are not
		err = r.copyObject(w, f)
		if err == nil {
			err = f.Chmod(atomicfile.ModeOf(w.Mode))
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			f.Discard()
			r.done()
			if errors.Is(err, errCkptCorrupt) {
				return nil, err
			}
			return nil, fmt.Errorf("restoring %s: %w", w.Path, err)
		}
		staged[w.Path] = f.Name()
	}
	return staged, nil
}

// done runs the restore's clean-ups (its temporary directory's removal).
func (r *restorer) done() {
	for _, f := range r.cleanup {
		f()
	}
	r.cleanup = nil
}

// under says whether p is below one of dirs (all clean, slash-separated and relative to the
// tree's root: tree.Below's rule, the one home of "is this path inside that one").
func under(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return tree.Below(d, p) })
}

// sameContent says whether the tree's file c has checkpoint entry w's content: known without
// reading when its identity is the one recorded, or when it is a fork's copy of an origin file
// unchanged since (seed.go), else by hashing it.
func (r *restorer) sameContent(w, c *ckptEntry) (bool, error) {
	if c.Size != w.Size {
		return false, nil
	}
	if c.Ino != 0 && c.Ino == w.Ino && c.CTime == w.CTime && c.MTime == w.MTime {
		return true, nil
	}
	if copiedUnchanged(r.origin, w, c) {
		return true, nil
	}
	f, err := r.root.OpenFile(string(w.Path), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false, nil // it will be replaced
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false, nil
	}
	h, err := tree.HashReader(f)
	if err != nil {
		return false, nil
	}
	return h == w.Hash, nil
}

// copyObject copies the content of checkpoint file w from its object to dst, checking it
// against the hash and size the manifest gives (the store is the agent's to write): an object
// that is missing, not a regular file (a symlink, a directory), short, long or other content
// is a damaged store, named with the file it was for.
func (r *restorer) copyObject(w *ckptEntry, dst io.Writer) error {
	obj, err := os.OpenFile(filepath.Join(r.store.objectDir(), w.Hash), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return corrupt("the content of %s (object %s) is missing", w.Path, w.Hash)
		}
		if errors.Is(err, unix.ELOOP) {
			return corrupt("the content of %s (object %s) is a symlink, not a file of the store", w.Path, w.Hash)
		}
		return corrupt("the content of %s (object %s) cannot be read: %v", w.Path, w.Hash, err)
	}
	defer obj.Close()
	if fi, err := obj.Stat(); err != nil || !fi.Mode().IsRegular() {
		return corrupt("the content of %s (object %s) is not a regular file", w.Path, w.Hash)
	}
	h := tree.NewHasher()
	n, err := io.Copy(io.MultiWriter(dst, h), io.LimitReader(obj, w.Size+1))
	if err != nil {
		if errors.Is(err, unix.EISDIR) {
			return corrupt("the content of %s (object %s) is not a regular file", w.Path, w.Hash)
		}
		return err
	}
	if n != w.Size || h.Sum() != w.Hash {
		return corrupt("the content of %s (object %s) is not what the checkpoint names (%d bytes read, %d expected)", w.Path, w.Hash, n, w.Size)
	}
	return nil
}
