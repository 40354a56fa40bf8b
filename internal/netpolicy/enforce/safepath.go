package enforce

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Root (and the Lima user) act on the agent's home, its staged copy and their parents, some of
// which the agent can write: a component swapped for a symbolic link would steer a path-based
// mkdir or chown anywhere (/etc/cron.d). So those paths are walked by directory descriptors
// from "/", with no symbolic link followed at any component, and acted on through the
// descriptors (mkdirat, fchown, fchownat). The standard library's os.Root does not do this: it
// follows links that stay beneath its root, and a link inside a tree the agent owns is exactly
// what must not be followed, so the walk is written here on golang.org/x/sys/unix.

// SymlinkError is a path that has a symbolic link (or something else than a directory) where a
// directory was expected: never followed.
type SymlinkError struct {
	Path string // the whole path
	At   string // the component's path, when known
}

func (e *SymlinkError) Error() string {
	if e.At != "" && e.At != e.Path {
		return fmt.Sprintf("%s: %s is a symbolic link or not a directory; it is not followed", e.Path, e.At)
	}
	return fmt.Sprintf("%s: a symbolic link or not a directory; it is not followed", e.Path)
}

// checkCleanAbs refuses a path that is not clean and absolute ("..", "//", relative).
func checkCleanAbs(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%q is not a clean absolute path", p)
	}
	return nil
}

// components splits a clean absolute path into its names ("/" has none).
func components(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// beforeOpenHook, when set (tests only), is called with each component's path just before the
// walks open it: a test swaps it for a link there, as an agent racing the walk would.
var beforeOpenHook func(at string)

// forceComponentWalk makes openDirNoFollow skip openat2 (tests cover both ways).
var forceComponentWalk = false

// openDirNoFollow opens the directory p (clean, absolute) with no symbolic link followed at any
// component: openat2 with RESOLVE_NO_SYMLINKS where the kernel has it (Linux 5.6), else one
// openat(O_NOFOLLOW|O_DIRECTORY) per component from "/".
func openDirNoFollow(p string) (int, error) {
	if err := checkCleanAbs(p); err != nil {
		return -1, err
	}
	if !forceComponentWalk {
		fd, err := openat2NoSymlinks(p)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EXDEV):
			// Name the component: the walk below finds it (or the path changed meanwhile).
		case !errors.Is(err, errNoOpenat2):
			return -1, fmt.Errorf("%s: %w", p, err)
		}
	}
	return walkDirs(p, nil)
}

// walkDirs opens "/" and then each component of p as a directory, never following a link;
// each, with the descriptor of its parent, is shown to visit (when set) before it is opened,
// which may create it (mkdirat). It returns the descriptor of p.
func walkDirs(p string, visit func(parent int, name, at string) error) (int, error) {
	fd, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return -1, fmt.Errorf("opening /: %w", err)
	}
	at := ""
	for _, name := range components(p) {
		at += "/" + name
		if visit != nil {
			if err := visit(fd, name, at); err != nil {
				unix.Close(fd)
				return -1, err
			}
		}
		if beforeOpenHook != nil {
			beforeOpenHook(at)
		}
		next, err := unix.Openat(fd, name, dirFlags, 0)
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, &SymlinkError{Path: p, At: at}
			}
			return -1, fmt.Errorf("%s: %w", at, err)
		}
		fd = next
	}
	return fd, nil
}

// mkdirAllNoFollow opens the directory p, creating what is missing of it on the way with mode
// perm: p itself, when created, is the agent's (uid:gid); a directory created on the way is its
// parent's owner's when that is the agent or the staging user (as their own mkdir -p would have
// made it), else root's. It follows no link at any component; a component swapped for a link
// between its creation and its opening is an error, never followed.
func mkdirAllNoFollow(p string, perm uint32, uid, gid, stagingUID int) (int, error) {
	if err := checkCleanAbs(p); err != nil {
		return -1, err
	}
	return walkDirs(p, func(parent int, name, at string) error {
		var st unix.Stat_t
		err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return &SymlinkError{Path: p, At: at}
			}
			return nil
		}
		if !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %w", at, err)
		}
		var pst unix.Stat_t
		if err := unix.Fstat(parent, &pst); err != nil {
			return fmt.Errorf("%s: %w", path.Dir(at), err)
		}
		if err := unix.Mkdirat(parent, name, perm); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("mkdir %s: %w", at, err)
		}
		ouid, ogid := uid, gid
		if at != p {
			if int(pst.Uid) != uid && (stagingUID <= 0 || int(pst.Uid) != stagingUID) {
				return nil // root's, as mkdir made it
			}
			ouid, ogid = int(pst.Uid), int(pst.Gid)
		}
		// Opened (not named) to be given: whatever is at name now, a link is not followed.
		fd, err := unix.Openat(parent, name, dirFlags, 0)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return &SymlinkError{Path: p, At: at}
			}
			return fmt.Errorf("%s: %w", at, err)
		}
		defer unix.Close(fd)
		var nst unix.Stat_t
		if err := unix.Fstat(fd, &nst); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if nst.Uid != 0 {
			return nil // not the directory root just made: left as it is
		}
		if err := unix.Fchown(fd, ouid, ogid); err != nil {
			return fmt.Errorf("chown %s: %w", at, err)
		}
		return nil
	})
}
