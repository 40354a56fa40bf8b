//go:build !linux

package enforce

import "errors"

// RunAs is Linux's (the guest's).
func RunAs(Layout, string, []string) error {
	return errors.New("net as runs in a Linux guest only")
}
