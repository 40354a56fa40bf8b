//go:build !linux

package enforce

import (
	"errors"
	"net"
)

var errOnlyLinux = errors.New("the secrets relay is reached on Linux guests only")

// dialRelay is Linux's (the guest is Linux).
func dialRelay(Layout, UserPolicy, string, bool, string) (net.Conn, error) {
	return nil, errOnlyLinux
}

// connectRelay is Linux's.
func connectRelay(Layout, string, int, string) (net.Conn, error) { return nil, errOnlyLinux }
