package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS makes durable everything written to the file system that holds f (syncfs(2)): the
// one fsync of files made with SkipSync.
func SyncFS(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "syncfs", Path: f.Name(), Err: serr}
	}
	return nil
}
