package review

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// hostTree does every host write of a review inside the working directory, through os.Root
// (which refuses to leave it), and never through a symbolic link: each parent component is
// checked to be a real directory before a write, and the final component is replaced by
// rename, never written through.
type hostTree struct {
	dir  string
	root *os.Root
}

func openHost(dir string) (*hostTree, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &hostTree{dir: dir, root: r}, nil
}

func (h *hostTree) close() { h.root.Close() }

// unsafePath says why a path read from the guest must not be used on the host ("" if it is
// fine): it must be relative, clean, without "..", NUL, or a .git component at its start.
func unsafePath(p string) string {
	switch {
	case p == "" || p == ".":
		return "empty path"
	case strings.ContainsRune(p, 0):
		return "the path contains a NUL byte"
	case strings.HasPrefix(p, "/"):
		return "absolute path"
	case path.Clean(p) != p:
		return "the path is not clean (it has //, ./ or a trailing /)"
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "the path climbs out with .."
		}
	}
	if first, _, _ := strings.Cut(p, "/"); strings.EqualFold(first, ".git") {
		return ".git is never written by a review (the guest's git metadata stays in the guest)"
	}
	return ""
}

// display escapes a path for a terminal: control characters (newlines, escape sequences) and
// invalid UTF-8 are shown as Go escapes.
func display(p string) string {
	safe := utf8.ValidString(p) && !strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) })
	if safe {
		return p
	}
	q := fmt.Sprintf("%q", p)
	return q
}

// symlinkTargetInside says whether a symlink at rel pointing to target stays inside the
// working directory (judged lexically; absolute targets never do).
func symlinkTargetInside(rel, target string) bool {
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsRune(target, 0) {
		return false
	}
	joined := path.Join(path.Dir(rel), target)
	return joined != ".." && !strings.HasPrefix(joined, "../") && !path.IsAbs(joined)
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
			return fmt.Errorf("%s: the host's %s is a symbolic link; refusing to write through it", display(rel), display(p))
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s: the host's %s is not a directory", display(rel), display(p))
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
func (h *hostTree) entry(rel string) (*staging.Entry, error) {
	if err := h.checkParents(rel); err != nil {
		return nil, err
	}
	fi, err := h.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e := &staging.Entry{Path: runnerproto.Name(rel), Mode: uint32(fi.Mode().Perm())}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.Mode = uint32(st.Mode) & 0o7777
	}
	switch {
	case fi.Mode().IsRegular():
		e.Type, e.Size = runnerproto.TypeFile, fi.Size()
		e.Hash, err = h.hash(rel)
		if err != nil {
			return nil, err
		}
	case fi.IsDir():
		e.Type = runnerproto.TypeDir
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := h.root.Readlink(rel)
		if err != nil {
			return nil, err
		}
		e.Type, e.Target = runnerproto.TypeSymlink, runnerproto.Name(t)
	default:
		e.Type = runnerproto.TypeOther
	}
	return e, nil
}

func (h *hostTree) hash(rel string) (string, error) {
	f, err := h.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
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

// writeFile replaces rel with data atomically: a temporary file in the same directory,
// fsync, then rename. The mode loses setuid, setgid and sticky bits. An existing file's owner
// is kept when the process may set it.
func (h *hostTree) writeFile(rel string, data io.Reader, mode uint32) error {
	if err := h.mkdirParents(rel); err != nil {
		return err
	}
	old, _ := h.root.Lstat(rel)
	if old != nil && old.IsDir() {
		if err := h.root.Remove(rel); err != nil {
			return fmt.Errorf("%s is a directory on the host and is not empty: %w", display(rel), err)
		}
	}
	tmp := tmpName(rel)
	f, err := h.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
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
	if old != nil {
		if st, isStat := old.Sys().(*syscall.Stat_t); isStat {
			_ = f.Chown(int(st.Uid), int(st.Gid)) // best effort: keep the host's ownership
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := h.root.Rename(tmp, rel); err != nil {
		return err
	}
	ok = true
	return nil
}

// symlink replaces rel with a symlink to target, which must stay inside the working directory
// unless restoring is set (putting back a symlink the host itself had).
func (h *hostTree) symlink(rel, target string, restoring bool) error {
	if !restoring && !symlinkTargetInside(rel, target) {
		return fmt.Errorf("%s: symlink target %s leaves the working directory; refused", display(rel), display(target))
	}
	if err := h.mkdirParents(rel); err != nil {
		return err
	}
	if old, _ := h.root.Lstat(rel); old != nil && old.IsDir() {
		if err := h.root.Remove(rel); err != nil {
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
	return nil
}

// mkdir creates the directory rel.
func (h *hostTree) mkdir(rel string, mode uint32) error {
	if err := h.checkParents(rel); err != nil {
		return err
	}
	if fi, err := h.root.Lstat(rel); err == nil {
		if fi.IsDir() {
			return nil
		}
		if err := h.root.Remove(rel); err != nil {
			return err
		}
	}
	return h.root.MkdirAll(rel, fs.FileMode(mode&0o777)|0o700)
}

// remove deletes rel (a file, a symlink itself, or an empty directory). A directory that
// still holds something (the host's own new files) is kept.
func (h *hostTree) remove(rel string) error {
	if err := h.checkParents(rel); err != nil {
		return err
	}
	err := h.root.Remove(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		if fi, lerr := h.root.Lstat(rel); lerr == nil && fi.IsDir() {
			return nil // not empty: what is left is the host's
		}
	}
	return err
}

// chmod sets rel's permission bits (never setuid, setgid or sticky); a symlink is refused.
func (h *hostTree) chmod(rel string, mode uint32) error {
	if err := h.checkParents(rel); err != nil {
		return err
	}
	fi, err := h.root.Lstat(rel)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link on the host; refusing to change its target's mode", display(rel))
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
