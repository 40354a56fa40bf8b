package walk

import (
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// StatAt is the lstat of name in the open directory dir: fstatat(2) on the directory's
// descriptor, so the kernel looks up one name, not every directory of a full path again.
// In the emulated guest that is about a fifth of a 10,000-file walk (docs/benchmarks.md). It
// gives what os.Lstat would of the same entry (its Sys is a *syscall.Stat_t), which the walk's
// tests check against os.Lstat for every kind of entry and mode bit.
//
// Written here because the standard library does not offer it: os.Root's Lstat does the
// same call behind checks that cost what the shorter lookup saves (measured in the guest),
// and syscall's Fstatat is not exported on amd64.
func StatAt(dir *os.File, name string) (fs.FileInfo, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return nil, &fs.PathError{Op: "lstat", Path: dir.Name() + "/" + name, Err: err}
		}
	}
	return &fileInfo{name: name, st: sysStat(&st)}, nil
}

// sysStat is the same stat as the syscall package's type, which os's FileInfo gives and the
// callers read (ctime, inode, link count, owner).
func sysStat(u *unix.Stat_t) *syscall.Stat_t {
	return &syscall.Stat_t{
		Dev: u.Dev, Ino: u.Ino, Nlink: u.Nlink, Mode: u.Mode, Uid: u.Uid, Gid: u.Gid,
		Rdev: u.Rdev, Size: u.Size, Blksize: u.Blksize, Blocks: u.Blocks,
		Atim: syscall.Timespec{Sec: u.Atim.Sec, Nsec: u.Atim.Nsec},
		Mtim: syscall.Timespec{Sec: u.Mtim.Sec, Nsec: u.Mtim.Nsec},
		Ctim: syscall.Timespec{Sec: u.Ctim.Sec, Nsec: u.Ctim.Nsec},
	}
}

// fileInfo is os's FileInfo of a stat, as os fills it on Linux.
type fileInfo struct {
	name string
	st   *syscall.Stat_t
}

func (f *fileInfo) Name() string       { return f.name }
func (f *fileInfo) Size() int64        { return f.st.Size }
func (f *fileInfo) IsDir() bool        { return f.Mode().IsDir() }
func (f *fileInfo) Sys() any           { return f.st }
func (f *fileInfo) ModTime() time.Time { return time.Unix(f.st.Mtim.Sec, f.st.Mtim.Nsec) }

func (f *fileInfo) Mode() fs.FileMode {
	m := fs.FileMode(f.st.Mode & 0o777)
	switch f.st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if f.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if f.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if f.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
