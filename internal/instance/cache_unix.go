//go:build unix

package instance

import (
	"errors"
	"syscall"
)

// processRuns says whether a process pid exists.
func processRuns(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
