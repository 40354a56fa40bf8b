//go:build unix

package sshlink

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// setProcAttr puts an ssh client process in a process group of its own: a Ctrl-C meant for us
// must not end the guest connection before we do.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// ownSocket checks that sock is a socket owned by us in a directory owned by us that nobody
// else may write: what runs through it runs as the guest user, so it must be the master Lima's
// host agent made for us, never one another local user put there.
func ownSocket(sock string) error {
	fi, err := os.Lstat(sock)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s is not a socket", sock)
	}
	uid := uint32(os.Getuid())
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uid {
		return fmt.Errorf("%s is not owned by us", sock)
	}
	dir := filepath.Dir(sock)
	di, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st, ok := di.Sys().(*syscall.Stat_t); !ok || st.Uid != uid || !di.IsDir() || di.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is not a directory only we may write", dir)
	}
	return nil
}
