package timeline

import (
	"io/fs"
	"syscall"
)

// inode is a file's inode number (0 when the system does not say).
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino) //nolint:unconvert // int on some systems
	}
	return 0
}
