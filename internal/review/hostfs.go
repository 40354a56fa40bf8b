package review

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// hostTree does every host write of a review inside the working directory, through os.Root
// (which refuses to leave it), and never through a symbolic link: each parent component is
// checked to be a real directory before a write, and the final component is replaced by
// rename, never written through.
type hostTree struct {
	dir  string
	root *os.Root
	// dirty are the directories whose entries changed, for syncDirs.
	dirty map[string]bool
}

func openHost(dir string) (*hostTree, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &hostTree{dir: dir, root: r}, nil
}

func (h *hostTree) close() { h.root.Close() }

// symlinkTargetInside says whether a symlink at rel pointing to target stays inside the
// working directory (judged lexically; absolute targets never do).
func symlinkTargetInside(rel, target string) bool {
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsRune(target, 0) {
		return false
	}
	return tree.Within(".", path.Join(path.Dir(rel), target))
}

// checkParents verifies that every parent directory of rel that exists is a real directory
// (not a symlink, not a file).
func (h *hostTree) checkParents(rel string) error {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		fi, err := h.root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // created as a real directory when needed
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: the host's %s is a symbolic link; refusing to write through it", rel, p)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s: the host's %s is not a directory", rel, p)
		}
	}
	return nil
}

// mkdirParents creates the missing parent directories of rel.
func (h *hostTree) mkdirParents(rel string) error {
	if err := h.checkParents(rel); err != nil {
		return err
	}
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	return h.root.MkdirAll(dir, 0o755)
}

// entry describes the host's rel (nil when absent), hashing a file's content.
func (h *hostTree) entry(rel string) (*tree.Entry, error) {
	if err := h.checkParents(rel); err != nil {
		return nil, err
	}
	e, err := h.lstat(rel)
	if err != nil || e == nil || e.Type != tree.File {
		return e, err
	}
	if e.Hash, err = h.hash(rel); err != nil {
		return nil, err
	}
	return e, nil
}

func (h *hostTree) hash(rel string) (string, error) {
	f, err := h.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return tree.HashReader(f)
}

func (h *hostTree) readFile(rel string) ([]byte, error) {
	if err := h.checkParents(rel); err != nil {
		return nil, err
	}
	f, err := h.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func tmpName(rel string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dir, base := path.Split(rel)
	return dir + "." + base + ".limactl-mcp-" + hex.EncodeToString(b)
}

// check is what a write verifies immediately before it changes the host (nil: nothing).
type check func() error

// expect returns the check that the host's rel is still want (nil: absent): run immediately
// before a rename, after the new content is already local, so that a save the person makes
// while the content travels is never overwritten.
func (h *hostTree) expect(rel string, want *tree.Entry) check {
	return func() error {
		now, err := h.entry(rel)
		if err != nil {
			return err
		}
		if !sameOrAbsent(now, want) {
			return errChangedOnHost
		}
		return nil
	}
}

var errChangedOnHost = errors.New("changed on the host during the review; nothing written (review again)")

// allowed refuses, for every writer, what the host invariant forbids whatever the plan says.
func allowed(rel string) error {
	if why := refusePath(rel); why != "" {
		return fmt.Errorf("%s: %s", rel, why)
	}
	return nil
}

// writeFile replaces rel with data atomically: a temporary file in the same directory,
// fsync, the check, then rename. The mode is taken as given (permission bits only: the plan
// masks a guest's mode with the umask, undo restores the host's own). An existing file's
// owner is kept when the process may set it.
func (h *hostTree) writeFile(rel string, data io.Reader, mode uint32, ok check) error {
	if err := allowed(rel); err != nil {
		return err
	}
	if err := h.mkdirParents(rel); err != nil {
		return err
	}
	tmp := tmpName(rel)
	f, err := h.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			_ = h.root.Remove(tmp)
		}
	}()
	if _, err := io.Copy(f, data); err != nil {
		return err
	}
	if err := f.Chmod(fs.FileMode(mode & 0o777)); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := runCheck(ok); err != nil {
		return err
	}
	old, _ := h.root.Lstat(rel)
	if old != nil {
		if st, isStat := old.Sys().(*syscall.Stat_t); isStat {
			_ = h.root.Lchown(tmp, int(st.Uid), int(st.Gid)) // best effort: keep the host's ownership
		}
		if old.IsDir() {
			if err := h.removeDir(rel); err != nil {
				return err
			}
		}
	}
	if err := h.root.Rename(tmp, rel); err != nil {
		return err
	}
	done = true
	h.touched(rel)
	return nil
}

func runCheck(ok check) error {
	if ok == nil {
		return nil
	}
	return ok()
}

// symlink replaces rel with a symlink to target, which must stay inside the working directory
// (by its text; guardFinalState follows chains) unless restoring is set (putting back a
// symlink the host itself had).
func (h *hostTree) symlink(rel, target string, restoring bool, ok check) error {
	if err := allowed(rel); err != nil {
		return err
	}
	if !restoring && !symlinkTargetInside(rel, target) {
		return fmt.Errorf("%s: symlink target %s leaves the working directory; refused", rel, target)
	}
	if err := h.mkdirParents(rel); err != nil {
		return err
	}
	if err := runCheck(ok); err != nil {
		return err
	}
	if old, _ := h.root.Lstat(rel); old != nil && old.IsDir() {
		if err := h.removeDir(rel); err != nil {
			return err
		}
	}
	tmp := tmpName(rel)
	if err := h.root.Symlink(target, tmp); err != nil {
		return err
	}
	if err := h.root.Rename(tmp, rel); err != nil {
		_ = h.root.Remove(tmp)
		return err
	}
	h.touched(rel)
	return nil
}

// mkdir makes rel a directory with mode (permission bits), replacing what else is there.
func (h *hostTree) mkdir(rel string, mode uint32, ok check) error {
	if err := allowed(rel); err != nil {
		return err
	}
	if err := h.checkParents(rel); err != nil {
		return err
	}
	if err := runCheck(ok); err != nil {
		return err
	}
	fi, err := h.root.Lstat(rel)
	switch {
	case err == nil && fi.IsDir():
	case err == nil:
		if err := h.root.Remove(rel); err != nil {
			return err
		}
		fallthrough
	default:
		if err := h.root.MkdirAll(rel, 0o700); err != nil {
			return err
		}
		h.touched(rel)
	}
	return h.root.Chmod(rel, fs.FileMode(mode&0o777))
}

// remove deletes rel (a file, a symlink itself, or an empty directory). A directory that
// still holds something (the host's own files) is an error: it is kept, and so is the path's
// pending change.
func (h *hostTree) remove(rel string, ok check) error {
	if err := allowed(rel); err != nil {
		return err
	}
	if err := h.checkParents(rel); err != nil {
		return err
	}
	if err := runCheck(ok); err != nil {
		return err
	}
	fi, err := h.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return h.removeDir(rel)
	}
	if err := h.root.Remove(rel); err != nil {
		return err
	}
	h.touched(rel)
	return nil
}

// removeDir removes an empty directory; one that holds something is kept, with an error that
// says so.
func (h *hostTree) removeDir(rel string) error {
	if err := h.root.Remove(rel); err != nil {
		if fi, lerr := h.root.Lstat(rel); lerr == nil && fi.IsDir() {
			return fmt.Errorf("the host's directory %s still holds files the guest does not know; kept", rel)
		}
		return err
	}
	h.touched(rel)
	return nil
}

// lstat describes rel without reading a file's content (nil when absent, or when a parent is
// not a directory).
func (h *hostTree) lstat(rel string) (*tree.Entry, error) {
	fi, err := h.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e, err := tree.EntryOf(rel, fi, func() (string, error) { return h.root.Readlink(rel) })
	if err != nil {
		return nil, err
	}
	e.MTime = 0 // review compares content, never times
	return &e, nil
}

// touched records that rel's directory changed, so that syncDirs makes it durable.
func (h *hostTree) touched(rel string) {
	if h.dirty == nil {
		h.dirty = map[string]bool{}
	}
	h.dirty[path.Dir(rel)] = true
}

// syncDirs fsyncs every directory whose entries changed: a rename is durable only once its
// directory is.
func (h *hostTree) syncDirs() error {
	for d := range h.dirty {
		f, err := h.root.Open(d)
		if err != nil {
			continue // removed since: nothing to make durable
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("syncing %s: %w", d, err)
		}
	}
	h.dirty = nil
	return nil
}

// backup copies the host's file rel to dst and checks that it is the one described by want
// (its content hash), so that the backup holds exactly what the write replaces.
func (h *hostTree) backup(rel string, want *tree.Entry, dst string) error {
	if err := h.checkParents(rel); err != nil {
		return err
	}
	src, err := h.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	sum := tree.NewHasher()
	if _, err := io.Copy(io.MultiWriter(out, sum), src); err != nil {
		return err
	}
	if sum.Sum() != want.Hash {
		return errChangedOnHost
	}
	return out.Sync()
}

// tree lists every path below the host's directory rel (relative to the working directory),
// not following links.
func (h *hostTree) tree(rel string) ([]string, error) {
	var out []string
	var walk func(dir string) error
	walk = func(dir string) error {
		f, err := h.root.Open(dir)
		if err != nil {
			return err
		}
		ents, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := dir + "/" + e.Name()
			out = append(out, p)
			if e.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(rel)
}

// masked is mode as the host gets it: permission bits only, less the person's umask.
func masked(mode uint32) uint32 {
	return mode & 0o777 &^ umask()
}

var umaskOnce = sync.OnceValue(readUmask)

func umask() uint32 { return umaskOnce() }

// chmod sets rel's permission bits (never setuid, setgid or sticky); a symlink is refused.
func (h *hostTree) chmod(rel string, mode uint32) error {
	if err := allowed(rel); err != nil {
		return err
	}
	if err := h.checkParents(rel); err != nil {
		return err
	}
	fi, err := h.root.Lstat(rel)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link on the host; refusing to change its target's mode", rel)
	}
	return h.root.Chmod(rel, fs.FileMode(mode&0o777))
}

// removeTemps deletes temporary files a killed apply left next to rel.
func (h *hostTree) removeTemps(rel string) {
	if h.checkParents(rel) != nil {
		return
	}
	dir, base := path.Split(rel)
	d := strings.TrimSuffix(dir, "/")
	if d == "" {
		d = "."
	}
	f, err := h.root.Open(d)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		if strings.HasPrefix(n, "."+base+".limactl-mcp-") {
			_ = h.root.Remove(dir + n)
		}
	}
}

// readDir lists the names in the host's directory rel ("" for the working directory).
func (h *hostTree) readDir(rel string) ([]string, error) {
	if rel == "" {
		rel = "."
	}
	f, err := h.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// hasName says whether the host's directory of rel has an entry spelled exactly as rel's last
// component. On a host that folds names, a lookup of rel also finds another spelling; a
// rename's new name is judged by its spelling.
func (h *hostTree) hasName(rel string) bool {
	dir, base := path.Split(rel)
	names, err := h.readDir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return false
	}
	for _, n := range names {
		if n == base {
			return true
		}
	}
	return false
}
