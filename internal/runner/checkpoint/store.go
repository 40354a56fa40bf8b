package checkpoint

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// A session's checkpoint store, $HOME/.cache/limactl-mcp/checkpoints/SESSION/, holds:
//
//	lock              held (flock, exclusive) while a checkpoint is taken, restored or pruned
//	list.json         the checkpoints, oldest first, the next id and the store's size
//	manifests/ID      one checkpoint: every entry's path, type, mode, size, link target,
//	                  content hash, and the (mtime, ctime, inode) it had when it was read
//	objects/SHA256    a file's content, a copy (never a hard link to a file of the tree: a
//	                  write in place would change the object)
//
// The store is the runner user's, so the agent's: it can write anything here. So everything is
// read with caps and checked (paths, types, modes, hashes; an object's content against its
// name before it is written back), and a store that does not make sense is an error that says
// so, never a panic and never a write outside the tree.

const BaseDir = ".cache/limactl-mcp/checkpoints"

// Caps on what is read back from a store.
const (
	maxCkptList      = 1 << 20  // list.json
	maxCkptManifest  = 64 << 20 // a manifest, decompressed
	maxCkptLabel     = 200      // bytes of a label
	ckptHardMaxEntry = 500_000  // entries of a manifest, whatever the request says
)

var ckptIDPattern = regexp.MustCompile(`^[1-9][0-9]{0,8}$`)

// sessionName is what a session's name must match (the names of background groups').
var sessionName = regexp.MustCompile(runnerproto.BgNamePattern)

// ckptStore is one session's store.
type ckptStore struct {
	dir   string
	cache *Cache // nil: none
}

// ckptEntry is a manifest's entry: a tree.Entry and the identity of the file it was read from,
// so that the next checkpoint can tell an unchanged file without reading it.
type ckptEntry struct {
	tree.Entry
	CTime int64  `json:"ct,omitempty"`
	Ino   uint64 `json:"i,omitempty"`
}

// ckptManifest is one checkpoint's manifest.
type ckptManifest struct {
	Info    runnerproto.CkptInfo `json:"info"`
	Entries []ckptEntry          `json:"entries"`
}

// ckptList is list.json.
type ckptList struct {
	Next        int                    `json:"next"`
	StoreBytes  int64                  `json:"store_bytes"`
	Checkpoints []runnerproto.CkptInfo `json:"checkpoints"`
	// PrunedSinceGC counts the checkpoints pruned since their content was last collected.
	PrunedSinceGC int `json:"pruned_since_gc,omitempty"`
}

// errCkptCorrupt marks a store that does not make sense. Its message gives no advice to remove
// the store: the store holds the other checkpoints, among them the automatic one a restore
// takes first, which may be the only copy of the work; the host says what to do.
var errCkptCorrupt = errors.New("the checkpoint store is damaged")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errCkptCorrupt, fmt.Sprintf(format, args...))
}

// errNoCkptStore says a session has no store yet (nothing was ever checkpointed).
var errNoCkptStore = errors.New("no checkpoint store")

// openCkptStore is the store of session, made if missing (unless !create: errNoCkptStore).
func openCkptStore(session string, create bool, cache *Cache) (*ckptStore, error) {
	if !sessionName.MatchString(session) {
		return nil, fmt.Errorf("checkpoint session %q is not a valid name", session)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	s := &ckptStore{dir: filepath.Join(home, BaseDir, session), cache: cache}
	if !create {
		if _, err := os.Lstat(s.dir); errors.Is(err, os.ErrNotExist) {
			return nil, errNoCkptStore
		}
	}
	for _, d := range []string{s.dir, s.objectDir(), filepath.Join(s.dir, "manifests")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("making the checkpoint store: %w", err)
		}
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return nil, corrupt("%s is not a directory", d)
		}
	}
	return s, nil
}

func (s *ckptStore) objectDir() string { return filepath.Join(s.dir, "objects") }

func (s *ckptStore) manifestPath(id string) string {
	return filepath.Join(s.dir, "manifests", id)
}

// lock takes the store's lock; the returned function releases it.
func (s *ckptStore) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the checkpoint store: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the checkpoint store: %w", err)
	}
	return func() { f.Close() }, nil
}

// readCapped reads a regular file (not through a link at its end) of at most max bytes.
func readCapped(p string, max int64) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, corrupt("%s is not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, corrupt("%s is larger than %d bytes", p, max)
	}
	return b, nil
}

// readList reads list.json (an empty list when there is none).
func (s *ckptStore) readList() (*ckptList, error) {
	b, err := readCapped(filepath.Join(s.dir, "list.json"), maxCkptList)
	if errors.Is(err, os.ErrNotExist) {
		return &ckptList{Next: 1}, nil
	}
	if err != nil {
		return nil, err
	}
	var l ckptList
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, corrupt("list.json: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range l.Checkpoints {
		n, err := strconv.Atoi(c.ID)
		if !ckptIDPattern.MatchString(c.ID) || err != nil || n >= l.Next || seen[c.ID] || len(c.Label) > maxCkptLabel {
			return nil, corrupt("list.json has a bad checkpoint %q", c.ID)
		}
		seen[c.ID] = true
	}
	if l.Next < 1 || l.Next > 999_999_999 || l.StoreBytes < 0 || l.PrunedSinceGC < 0 {
		return nil, corrupt("list.json's counters are out of range")
	}
	return &l, nil
}

// writeList replaces list.json atomically.
func (s *ckptStore) writeList(l *ckptList) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(s.dir, "list.json"), func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// writeAtomic writes a file of the store through a new file renamed into place
// (internal/atomicfile).
func writeAtomic(p string, write func(io.Writer) error) error {
	f, err := atomicfile.Create(filepath.Dir(p), filepath.Base(p), 0o600)
	if err != nil {
		return err
	}
	defer f.Discard()
	if err := write(f); err != nil {
		return err
	}
	return f.Replace(p)
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// checkManifestEntries refuses entries a restore could not follow safely: a path that is not
// clean and relative, one inside .git, entries out of order or twice, an entry whose parent is
// not a directory of the manifest, a type, mode, size or hash that makes no sense.
func checkManifestEntries(es []ckptEntry, max int) error {
	if len(es) > max {
		return fmt.Errorf("%d entries, more than %d", len(es), max)
	}
	dirs := map[tree.Name]bool{}
	for i, e := range es {
		p := string(e.Path)
		if p == "" || path.Clean(p) != p || !filepath.IsLocal(p) || strings.ContainsRune(p, 0) || hasGitComponent(p) {
			return fmt.Errorf("bad path %q", p)
		}
		if i > 0 && es[i-1].Path >= e.Path {
			return fmt.Errorf("paths out of order at %q", p)
		}
		if d := path.Dir(p); d != "." && !dirs[tree.Name(d)] {
			return fmt.Errorf("%q has no parent directory in the checkpoint", p)
		}
		if e.Mode > 0o7777 {
			return fmt.Errorf("%q: bad mode %o", p, e.Mode)
		}
		switch e.Type {
		case tree.Dir:
			dirs[e.Path] = true
		case tree.File:
			if e.Size < 0 || !hexHash.MatchString(e.Hash) {
				return fmt.Errorf("%q: bad size or hash", p)
			}
		case tree.Symlink:
			if e.Target == "" || strings.ContainsRune(string(e.Target), 0) || len(e.Target) > 4096 {
				return fmt.Errorf("%q: bad link target", p)
			}
		default:
			return fmt.Errorf("%q: bad type %q", p, e.Type)
		}
	}
	return nil
}

// hasGitComponent says whether a slash-separated path has a .git component: checkpoints leave
// every .git alone (git's own history; see docs/checkpoints.md).
func hasGitComponent(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".git" {
			return true
		}
	}
	return false
}

// objectNames lists the stored objects (names only: one directory read, no stat each).
func (s *ckptStore) objectNames() (map[string]bool, error) {
	if names := s.cache.objectNames(s.objectDir()); names != nil {
		return maps.Clone(names), nil
	}
	d, err := os.Open(s.objectDir())
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		if hexHash.MatchString(n) {
			out[n] = true
		}
	}
	return out, nil
}

// collectGarbage removes the objects no kept checkpoint refers to and temporary files left by
// an interrupted checkpoint, and returns the size of what is left.
func (s *ckptStore) collectGarbage(l *ckptList) (int64, error) {
	used, err := s.objectsUsed(l, "")
	if err != nil {
		return 0, err
	}
	size, err := s.sweepObjects(used)
	if err != nil {
		return 0, err
	}
	// Manifests of checkpoints that are no longer listed.
	if ms, err := os.ReadDir(filepath.Join(s.dir, "manifests")); err == nil {
		listed := map[string]bool{}
		for _, c := range l.Checkpoints {
			listed[c.ID] = true
		}
		for _, d := range ms {
			if !listed[d.Name()] {
				_ = os.Remove(filepath.Join(s.dir, "manifests", d.Name()))
			}
		}
	}
	return size, nil
}

// objectsUsed lists the objects the checkpoints of l refer to, but the checkpoint skip's.
func (s *ckptStore) objectsUsed(l *ckptList, skip string) (map[string]bool, error) {
	used := map[string]bool{}
	for _, c := range l.Checkpoints {
		if c.ID == skip {
			continue
		}
		m, err := s.readManifest(c.ID, 0)
		if err != nil {
			return nil, err
		}
		addObjects(used, m)
	}
	return used, nil
}

// addObjects adds the objects of m's files to set.
func addObjects(set map[string]bool, m *ckptManifest) {
	for _, e := range m.Entries {
		if e.Type == tree.File {
			set[e.Hash] = true
		}
	}
}

// sweepObjects removes every object (and leftover temporary file) not in keep and returns
// the size of those kept.
func (s *ckptStore) sweepObjects(keep map[string]bool) (int64, error) {
	ents, err := os.ReadDir(s.objectDir())
	if err != nil {
		return 0, err
	}
	var size int64
	for _, d := range ents {
		if keep[d.Name()] {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
			continue
		}
		_ = os.Remove(filepath.Join(s.objectDir(), d.Name()))
	}
	return size, nil
}
