package enforce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's socket table, asked through sock_diag (NETLINK_SOCK_DIAG, inet_diag): the
// owner of one exact TCP socket, found by the kernel's own hash lookup (O(1), whatever the size
// of the table), and the listening sockets of a port.
//
// Hand-written on x/sys/unix rather than a library: vishvananda/netlink's SocketGet sends its
// "exact" request with NLM_F_DUMP, which makes the kernel dump the whole table (the O(n) scan
// this replaces), and mdlayher/netlink would add two modules to the runner for the 60 lines of
// framing below; neither decodes inet_diag for us.

const (
	tcpEstablished = 1  // TCP_ESTABLISHED
	tcpListen      = 10 // TCP_LISTEN
	// inetDiagNoCookie is INET_DIAG_NOCOOKIE: "any socket with this address", not one cookie.
	inetDiagNoCookie = ^uint32(0)
	inetDiagReqLen   = 56 // struct inet_diag_req_v2
	inetDiagMsgLen   = 72 // struct inet_diag_msg
	// diagTimeout bounds every wait on the netlink socket (the kernel answers at once).
	diagTimeout = 5 * time.Second
	// maxDiagDump bounds a dump: more sockets than this on one port is an attack, and is refused.
	maxDiagDump = 1 << 20
)

// diagSocket is one socket as the kernel reports it.
type diagSocket struct {
	Local, Remote netip.AddrPort
	State         uint8
	UID           uint32
	Inode         uint32
}

// inetDiagRequest encodes struct inet_diag_req_v2 for TCP. The ports are big-endian, the
// addresses in network order, as the kernel's struct inet_diag_sockid holds them.
func inetDiagRequest(family uint8, states uint32, local, remote netip.AddrPort) []byte {
	b := make([]byte, inetDiagReqLen)
	b[0] = family
	b[1] = unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(b[4:], states)
	id := b[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	putDiagAddr(id[4:20], local.Addr())
	putDiagAddr(id[20:36], remote.Addr())
	// id[36:40] is the interface (0: any); the cookie says "no cookie".
	binary.NativeEndian.PutUint32(id[40:], inetDiagNoCookie)
	binary.NativeEndian.PutUint32(id[44:], inetDiagNoCookie)
	return b
}

func putDiagAddr(dst []byte, a netip.Addr) {
	if !a.IsValid() {
		return
	}
	if a.Is4() {
		v4 := a.As4()
		copy(dst, v4[:])
		return
	}
	v6 := a.As16()
	copy(dst, v6[:])
}

// parseInetDiagMsg decodes struct inet_diag_msg.
func parseInetDiagMsg(b []byte) (diagSocket, error) {
	if len(b) < inetDiagMsgLen {
		return diagSocket{}, fmt.Errorf("sock_diag: a %d-byte answer, not an inet_diag_msg", len(b))
	}
	family := b[0]
	id := b[4:52]
	addr := func(raw []byte) netip.Addr {
		if family == unix.AF_INET {
			return netip.AddrFrom4([4]byte(raw[:4]))
		}
		return netip.AddrFrom16([16]byte(raw[:16]))
	}
	return diagSocket{
		Local:  netip.AddrPortFrom(addr(id[4:20]), binary.BigEndian.Uint16(id[0:])),
		Remote: netip.AddrPortFrom(addr(id[20:36]), binary.BigEndian.Uint16(id[2:])),
		State:  b[1],
		UID:    binary.NativeEndian.Uint32(b[64:]),
		Inode:  binary.NativeEndian.Uint32(b[68:]),
	}, nil
}

// sockDiag sends one inet_diag request and returns the sockets of the answer (a dump: every
// matching socket; otherwise the one socket, or an error such as ENOENT).
func sockDiag(req []byte, dump bool) ([]diagSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(diagTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, err
	}
	flags := uint16(unix.NLM_F_REQUEST)
	if dump {
		flags |= unix.NLM_F_DUMP
	}
	const seq = 1
	msg := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(req))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.NLMSG_HDRLEN+len(req)))
	binary.NativeEndian.PutUint16(msg[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(msg[6:], flags)
	binary.NativeEndian.PutUint32(msg[8:], seq)
	msg = append(msg, req...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag request: %w", err)
	}
	var out []diagSocket
	buf := make([]byte, 64<<10)
	for {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, fmt.Errorf("sock_diag answer: %w", err)
		}
		if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
			continue // not from the kernel
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("sock_diag answer: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return nil, errors.New("sock_diag: a short error answer")
				}
				if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
					return nil, syscall.Errno(-errno)
				}
				return out, nil
			case unix.SOCK_DIAG_BY_FAMILY:
				s, err := parseInetDiagMsg(m.Data)
				if err != nil {
					return nil, err
				}
				out = append(out, s)
				if len(out) > maxDiagDump {
					return nil, fmt.Errorf("sock_diag: more than %d sockets answered", maxDiagDump)
				}
				if !dump {
					return out, nil
				}
			}
		}
	}
}

// diagFamily is the inet_diag family of an address (an IPv4-mapped address is looked up as
// IPv4: the kernel keeps such a socket in the IPv4 hash).
func diagFamily(a netip.Addr) (uint8, netip.Addr) {
	if a.Is4() || a.Is4In6() {
		return unix.AF_INET, a.Unmap()
	}
	return unix.AF_INET6, a
}

// socketOf returns the one TCP socket whose local address is local and whose remote address is
// remote: the kernel's hash lookup, not a walk of the table.
func socketOf(local, remote netip.AddrPort) (diagSocket, error) {
	family, l := diagFamily(local.Addr())
	_, r := diagFamily(remote.Addr())
	req := inetDiagRequest(family, ^uint32(0), netip.AddrPortFrom(l, local.Port()), netip.AddrPortFrom(r, remote.Port()))
	socks, err := sockDiag(req, false)
	if err != nil {
		return diagSocket{}, err
	}
	if len(socks) != 1 {
		return diagSocket{}, fmt.Errorf("sock_diag: %d sockets for %s -> %s", len(socks), local, remote)
	}
	return socks[0], nil
}

// listeners returns the listening TCP sockets of the machine's network namespace, of both
// families, on port (the kernel filters by state and, with a bytecode filter, by port: an
// agent's flood of sockets on other ports costs nothing here).
func listeners(port uint16) ([]diagSocket, error) {
	var all []diagSocket
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		req := inetDiagRequest(family, 1<<tcpListen, netip.AddrPort{}, netip.AddrPort{})
		socks, err := sockDiag(append(req, portFilter(port)...), true)
		if errors.Is(err, unix.EINVAL) {
			// A kernel without INET_DIAG_BC_S_EQ (before 4.17?): every listener, filtered here.
			socks, err = sockDiag(req, true)
		}
		if err != nil {
			if family == unix.AF_INET6 && (errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.ENOENT)) {
				continue // a kernel without IPv6
			}
			return nil, err
		}
		for _, s := range socks {
			if s.Local.Port() == port {
				all = append(all, s)
			}
		}
	}
	return all, nil
}

// portFilter is an INET_DIAG_REQ_BYTECODE attribute that keeps the sockets whose local port is
// port: one INET_DIAG_BC_S_EQ operation (yes: go on to the end, accept; no: jump past the end,
// reject), followed by the operation-sized word that holds the port.
func portFilter(port uint16) []byte {
	const (
		inetDiagReqBytecode = 1
		inetDiagBCSEq       = 11
	)
	b := make([]byte, 12)
	binary.NativeEndian.PutUint16(b[0:], 12) // nlattr length
	binary.NativeEndian.PutUint16(b[2:], inetDiagReqBytecode)
	b[4] = inetDiagBCSEq
	b[5] = 8                                    // yes
	binary.NativeEndian.PutUint16(b[6:], 12)    // no
	binary.NativeEndian.PutUint16(b[10:], port) // op[1].no
	return b
}
