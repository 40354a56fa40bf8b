package enforce

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// giveTree hands the staged copy at dir to the agent user: every entry owned by the staging
// user (from: the guest user who ran sudo) becomes uid:gid's (and, for `net release`, the other
// way). dir is reached with no symbolic link followed at any component (openDirNoFollow: the
// agent may own a parent), and the tree is walked on directory descriptors (openat with
// O_NOFOLLOW, fchownat with AT_SYMLINK_NOFOLLOW), so that an agent that swaps a directory for a
// symlink mid-walk (it owns the tree from the last connect) cannot steer it outside; it stays
// on dir's filesystem; and it leaves alone entries owned by anyone else, and files with more
// than one link (a hard link into the tree must not hand over a file that lives elsewhere).
func giveTree(dir string, from, uid, gid int) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("--own %s: the path must be absolute", dir)
	}
	fd, err := openDirNoFollow(dir)
	if err != nil {
		return fmt.Errorf("--own %s: must be a directory reached through no symbolic link: %w", dir, err)
	}
	return giveTreeFD(fd, dir, from, uid, gid)
}

// giveTreeFD is giveTree on the open directory fd (closed on return).
func giveTreeFD(fd int, dir string, from, uid, gid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("--own %s: %w", dir, err)
	}
	if st.Uid != uint32(from) && st.Uid != uint32(uid) {
		unix.Close(fd)
		return fmt.Errorf("--own %s: the directory belongs to uid %d, neither the guest user (%d) nor the agent; only a copy the guest user staged is handed to the agent", dir, st.Uid, from)
	}
	w := treeWalk{dev: uint64(st.Dev), from: uint32(from), uid: uid, gid: gid}
	if st.Uid != uint32(uid) || st.Gid != uint32(gid) {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			unix.Close(fd)
			return fmt.Errorf("--own %s: %w", dir, err)
		}
	}
	if err := w.walk(fd, dir); err != nil {
		return fmt.Errorf("--own %s: %w", dir, err)
	}
	return nil
}

// treeWalk is one giveTree: which filesystem, whose entries, to whom.
type treeWalk struct {
	dev      uint64
	from     uint32
	uid, gid int
}

// walk hands over the entries of the open directory fd (closing it) and recurses.
func (w treeWalk) walk(fd int, path string) error {
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("listing %s: %w", path, err)
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile
		}
		if uint64(st.Dev) != w.dev {
			continue // a mount point: another filesystem is not the staged copy
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		owned := st.Uid == uint32(w.uid) && st.Gid == uint32(w.gid)
		if !owned && (st.Uid == w.from || st.Uid == uint32(w.uid)) && (isDir || st.Nlink == 1) {
			if err := unix.Fchownat(fd, name, w.uid, w.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("chown %s: %w", filepath.Join(path, name), err)
			}
		}
		if !isDir {
			continue
		}
		if beforeOpenHook != nil {
			beforeOpenHook(filepath.Join(path, name))
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // replaced by something else meanwhile: not followed
		}
		var subSt unix.Stat_t
		if err := unix.Fstat(sub, &subSt); err != nil || uint64(subSt.Dev) != w.dev {
			unix.Close(sub)
			continue
		}
		if err := w.walk(sub, filepath.Join(path, name)); err != nil {
			return err
		}
	}
	return nil
}
