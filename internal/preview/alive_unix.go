//go:build unix

package preview

import (
	"errors"
	"syscall"
)

// processAlive says whether host process pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
