package enforce

import (
	"errors"

	"golang.org/x/sys/unix"
)

// errNoOpenat2 says the kernel has no openat2 (before Linux 5.6, or a seccomp filter refusing it).
var errNoOpenat2 = errors.New("openat2 is not available")

// openat2NoSymlinks opens the directory p with no symbolic link (nor /proc magic link) followed
// at any component.
func openat2NoSymlinks(p string) (int, error) {
	for i := 0; ; i++ {
		fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
			Flags:   dirFlags,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		switch {
		case err == nil:
			return fd, nil
		case (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && i < 100:
			continue // a rename raced the lookup
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			return -1, errNoOpenat2
		}
		return -1, err
	}
}
