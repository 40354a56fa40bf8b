//go:build !linux

package atomicfile

import (
	"os"
	"syscall"
)

// SyncFS makes durable everything written to the file system that holds f. Elsewhere than
// Linux (which has syncfs(2)) it is sync(2), for every file system.
func SyncFS(f *os.File) error {
	syscall.Sync()
	return nil
}
