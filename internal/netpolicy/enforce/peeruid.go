package enforce

import (
	"fmt"
	"net/netip"
)

// peerUID finds the uid of the process that owns the client end of a loopback TCP connection
// to the proxy: the socket whose local address is the client's and whose remote address is the
// proxy's. TCP has no SO_PEERCRED, and both ends are on this machine, so the kernel's socket
// table is the one place that knows; sock_diag looks the one socket up in the kernel's hash
// (socketOf), so the cost does not grow with the table, whatever the agent adds to it.
//
// It also gives the socket's inode: commandOf finds the process holding it.
func peerUID(client, proxy netip.AddrPort) (uid int, inode uint32, err error) {
	s, err := socketOf(client, proxy)
	if err != nil {
		return -1, 0, fmt.Errorf("the socket from %s to %s: %w", client, proxy, err)
	}
	// The kernel's lookup falls back to a listener on the client's address when the connection
	// is gone: only the connection itself names the peer.
	if s.State == tcpListen || s.Local.Port() != client.Port() || s.Remote.Port() != proxy.Port() {
		return -1, 0, fmt.Errorf("no connection from %s to %s (the client closed it?)", client, proxy)
	}
	return int(s.UID), s.Inode, nil
}
