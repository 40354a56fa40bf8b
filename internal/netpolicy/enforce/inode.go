package enforce

import (
	"os"
	"syscall"
)

// inodeOf is a FileInfo's inode number, when the platform has one.
func inodeOf(st os.FileInfo) (uint64, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return sys.Ino, true
}
