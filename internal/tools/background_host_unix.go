//go:build unix

package tools

import (
	"errors"
	"syscall"
)

// hostProcessAlive says whether process pid exists on this host.
func hostProcessAlive(pid int) bool {
	if pid <= 0 {
		return true // not a pid: nothing to conclude
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
