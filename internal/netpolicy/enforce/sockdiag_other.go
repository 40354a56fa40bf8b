//go:build !linux

package enforce

import (
	"errors"
	"net/netip"
)

// The kernel's socket table is asked through Linux's sock_diag (sockdiag_linux.go); the host
// binary links this package for its vocabulary only and never runs the proxy or ensure.

const (
	tcpEstablished = 1  // TCP_ESTABLISHED
	tcpListen      = 10 // TCP_LISTEN
)

// diagSocket is one socket as the kernel reports it.
type diagSocket struct {
	Local, Remote netip.AddrPort
	State         uint8
	UID           uint32
	Inode         uint32
}

var errNoSockDiag = errors.New("sock_diag is Linux's: the network policy runs in a Linux guest")

func socketOf(local, remote netip.AddrPort) (diagSocket, error) { return diagSocket{}, errNoSockDiag }

func listeners(port uint16) ([]diagSocket, error) { return nil, errNoSockDiag }
