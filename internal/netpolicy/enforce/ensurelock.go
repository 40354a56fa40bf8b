package enforce

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ensureLockWait bounds how long an Ensure waits for another one of the same user (a user's
// set-up takes seconds on an emulated guest: useradd, the firewall, the CA).
const ensureLockWait = 2 * time.Minute

// lockUser serialises the Ensures of one agent user: each reads the policy the user holds,
// writes the new one and logs the change, and two at once (a server setting its agent up while
// a live `limactl mcp network` change applies the same policy) logged one change twice. The
// lock is a root file in the root directory dir (no link followed); it is held until unlock,
// and waited for no longer than ctx and ensureLockWait allow.
func lockUser(ctx context.Context, dir, user string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, user+".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the set-up lock of %s: %w", user, err)
	}
	deadline := time.Now().Add(ensureLockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("the set-up lock of %s: %w", user, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another set-up of %s has held its lock for %v: try again", user, ensureLockWait)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another set-up of %s: %w", user, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
