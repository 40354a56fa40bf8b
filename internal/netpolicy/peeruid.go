package netpolicy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// peerUID finds the uid of the process that owns the client end of a loopback TCP connection
// to the proxy: the socket in /proc/net/tcp (or tcp6) whose local address is the client's and
// whose remote address is the proxy's. TCP has no SO_PEERCRED, and both ends are on this
// machine, so the kernel's socket table is the one place that knows.
func peerUID(procNet string, client, proxy netip.AddrPort) (int, error) {
	table := "tcp"
	if !client.Addr().Is4() { // an IPv4-mapped address is on an IPv6 socket
		table = "tcp6"
	}
	f, err := os.Open(filepath.Join(procNet, table))
	if err != nil {
		return -1, err
	}
	defer f.Close()
	local, remote := procNetAddr(client), procNetAddr(proxy)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[1] != local || fields[2] != remote {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		if err != nil {
			return -1, fmt.Errorf("%s: bad uid %q", table, fields[7])
		}
		return uid, nil
	}
	if err := sc.Err(); err != nil {
		return -1, err
	}
	return -1, fmt.Errorf("no socket from %s to %s in %s/%s (the client closed it?)", client, proxy, procNet, table)
}

// procNetAddr writes an address as /proc/net/tcp does: the address as 32-bit words in the
// machine's byte order, each as 8 upper-case hex digits, then ':' and the port as 4.
func procNetAddr(ap netip.AddrPort) string {
	var b strings.Builder
	addr := ap.Addr()
	var raw []byte
	if addr.Is4() {
		v4 := addr.As4()
		raw = v4[:]
	} else {
		v6 := addr.As16()
		raw = v6[:]
	}
	for i := 0; i < len(raw); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(raw[i:i+4]))
	}
	fmt.Fprintf(&b, ":%04X", ap.Port())
	return b.String()
}
