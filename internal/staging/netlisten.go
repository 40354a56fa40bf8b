package staging

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
)

// ListenPort is a socket the session's agent listens on in the guest. Lima's port forwarding
// (its guest agent lists every listening socket of the guest, and the default rules forward
// those on 127.0.0.1 and on every address) makes each one that is on the loopback or every
// address a listener on the host's 127.0.0.1, same port, while it lasts: docs/network.md.
type ListenPort struct {
	Proto string `json:"proto"` // tcp or udp
	Addr  string `json:"addr"`  // the guest address it is bound to
	Port  int    `json:"port"`
	// Host says whether Lima's default rules forward it to the host's loopback.
	Host bool `json:"forwarded_to_host"`
}

func (p ListenPort) String() string {
	s := fmt.Sprintf("%s %s", p.Proto, netip.AddrPortFrom(netip.MustParseAddr(p.Addr), uint16(p.Port)))
	if p.Host {
		s += fmt.Sprintf(" (host 127.0.0.1:%d)", p.Port)
	}
	return s
}

// listenScript prints the guest's socket tables (world-readable; what /proc says is the
// kernel's, whoever reads it).
const listenScript = "cat /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 2>/dev/null | head -c 4000000"

// maxListenPorts bounds what is reported.
const maxListenPorts = 100

// listenTables reads the guest's socket tables through conn, once, the first time it is called:
// they are the kernel's, the same whoever reads them (the agents share the guest's network
// namespace), so the Lima user's connection reads them for every agent.
func listenTables(ctx context.Context, conn *guest.Conn) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		out, err := conn.Stream(ctx, listenScript, nil)
		return string(out), err
	})
}

// listenersIn lists the sockets uid listens on (TCP listening, UDP unconnected) in what tables
// read (guest output: parsed, never trusted beyond its shape).
func listenersIn(tables func() (string, error), uid int) ([]ListenPort, error) {
	t, err := tables()
	if err != nil {
		return nil, err
	}
	return parseListeners(t, uid), nil
}

// parseListeners reads /proc/net/{tcp,tcp6,udp,udp6} lines (tables concatenated; a header
// line starts each, telling nothing apart: TCP's listening state is 0A, UDP's unconnected 07,
// and the local address's length tells the family) for the sockets of uid.
func parseListeners(tables string, uid int) []ListenPort {
	seen := map[ListenPort]bool{}
	var out []ListenPort
	for _, line := range strings.Split(tables, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[7] != strconv.Itoa(uid) {
			continue
		}
		local, remote, state := f[1], f[2], f[3]
		addr, port, ok := hexAddrPort(local)
		if !ok || !strings.HasSuffix(remote, ":0000") {
			continue
		}
		var proto string
		switch state {
		case "0A":
			proto = "tcp"
		case "07":
			proto = "udp"
		default:
			continue
		}
		p := ListenPort{Proto: proto, Addr: addr.String(), Port: port,
			Host: addr.IsLoopback() || addr.IsUnspecified() || addr == netip.MustParseAddr("::ffff:127.0.0.1")}
		if !seen[p] && len(out) < maxListenPorts {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		return out[i].Proto+out[i].Addr < out[j].Proto+out[j].Addr
	})
	return out
}

// hexAddrPort reads /proc/net's "0100007F:1F90" (IPv4: one little-endian word) or its
// 32-hex-digit IPv6 form (four little-endian words).
func hexAddrPort(s string) (netip.Addr, int, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 {
		return netip.Addr{}, 0, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.Addr{}, 0, false
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	addr, _ := netip.AddrFromSlice(raw)
	return addr.Unmap(), int(port), true
}
