package enforce

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// RunAs runs argv as the agent user in a confined mount namespace (see confine.go); it returns
// only on failure.
func RunAs(l Layout, user string, argv []string) error {
	if len(argv) == 0 {
		return errors.New("net as: no command")
	}
	u, err := checkAsUser(l, user)
	if err != nil {
		return err
	}
	exe, err := exec.LookPath(argv[0]) // root's PATH (sudo's secure_path): root's directories
	if err != nil {
		return fmt.Errorf("net as: %w", err)
	}
	// A mount namespace, no_new_privs and the exec belong to one thread (the ids are set on
	// every thread by the syscall package): this goroutine keeps it until the exec.
	runtime.LockOSThread()
	if err := confineMounts(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("net as: no_new_privs: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("net as: %w", err)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("net as: setgroups: %w", err)
	}
	if err := syscall.Setgid(u.GID); err != nil {
		return fmt.Errorf("net as: setgid: %w", err)
	}
	if err := syscall.Setuid(u.UID); err != nil {
		return fmt.Errorf("net as: setuid: %w", err)
	}
	if os.Getuid() != u.UID || os.Geteuid() != u.UID || os.Getegid() != u.GID {
		return errors.New("net as: the ids did not change")
	}
	return fmt.Errorf("net as: exec %s: %w", exe, syscall.Exec(exe, argv, agentEnv(os.Environ(), u)))
}

// confineMounts moves the calling thread into a new mount namespace whose mounts do not
// propagate back, with an empty tmpfs on /run (what tools expect there made again: /run/lock,
// sticky and world-writable, as Debian has it).
func confineMounts() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("net as: a mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("net as: making the mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=16m,nr_inodes=4096"); err != nil {
		return fmt.Errorf("net as: an empty /run: %w", err)
	}
	// The new tmpfs is root's and empty: nothing there to follow.
	if err := unix.Mkdir("/run/lock", 0o755); err != nil {
		return fmt.Errorf("net as: /run/lock: %w", err)
	}
	if err := unix.Chmod("/run/lock", 0o1777); err != nil {
		return fmt.Errorf("net as: /run/lock: %w", err)
	}
	return nil
}
