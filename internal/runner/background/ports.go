package background

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// The TCP sockets a background process's group listens on, found in /proc: the members of
// the group (every process whose process group is the command's pid: what it starts stays in
// it unless it makes a group of its own), the socket inodes among their open descriptors, and
// those of the listening entries of /proc/PID/net/tcp and tcp6 (the member's own network
// namespace). The runner reads only what its user may: the descriptors of its own user's
// processes (under a network policy, the agent user's runner sees the agent's processes).
//
// Hand-written rather than a library (prometheus/procfs, cakturk/go-netstat): it is fifty
// lines over four files of /proc, and the runner is embedded twice (its size matters). Every
// read is capped; nothing here is trusted beyond "a number in range".
//
// sock_diag would answer "which sockets listen" without /proc/net's text, but not "whose":
// its owner is a uid and an inode, and the inode → process link is only in /proc/PID/fd.

// Caps on the scan.
const (
	maxProcEntries  = 1 << 15 // entries of /proc looked at
	maxGroupMembers = 256     // processes of one group looked at
	maxFDs          = 4096    // descriptors of one process looked at
	maxNetTCP       = 8 << 20 // bytes of /proc/PID/net/tcp{,6} read
	maxStat         = 4096    // bytes of /proc/PID/stat read
)

// procRoot is /proc (a test may point it elsewhere).
var procRoot = "/proc"

// groupMembers returns, for each group in want, the pids of /proc whose process group it is.
func groupMembers(want []int) map[int][]int {
	out := map[int][]int{}
	if len(want) == 0 {
		return out
	}
	f, err := os.Open(procRoot)
	if err != nil {
		return out
	}
	defer f.Close()
	names, _ := f.Readdirnames(maxProcEntries)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid < 1 {
			continue
		}
		pgrp, ok := processGroup(pid)
		if !ok || !slices.Contains(want, pgrp) || len(out[pgrp]) >= maxGroupMembers {
			continue
		}
		out[pgrp] = append(out[pgrp], pid)
	}
	return out
}

// processGroup reads pid's process group from /proc/PID/stat: the fifth field, the third
// after the command's name, which is in parentheses and may hold anything but the last ')'.
func processGroup(pid int) (int, bool) {
	b, err := readCapped(procRoot+"/"+strconv.Itoa(pid)+"/stat", maxStat)
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 3 {
		return 0, false
	}
	pgrp, err := strconv.Atoi(fields[2])
	return pgrp, err == nil && pgrp > 0
}

// socketInodes returns the inodes of the sockets pid holds open (none when its descriptors
// are not ours to read).
func socketInodes(pid int, into map[uint64]bool) {
	dir := procRoot + "/" + strconv.Itoa(pid) + "/fd"
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	names, _ := f.Readdirnames(maxFDs)
	for _, n := range names {
		l, err := os.Readlink(dir + "/" + n)
		if err != nil {
			continue
		}
		s, ok := strings.CutPrefix(l, "socket:[")
		if !ok || !strings.HasSuffix(s, "]") {
			continue
		}
		if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
			into[ino] = true
		}
	}
}

// listeningOf returns the listening sockets of /proc/PID/net/tcp and tcp6 whose inode is in
// inodes, in the order found, one per address and port.
func listeningOf(pid int, inodes map[uint64]bool) []runnerproto.BgPort {
	var out []runnerproto.BgPort
	for _, name := range []string{"tcp", "tcp6"} {
		b, err := readCapped(procRoot+"/"+strconv.Itoa(pid)+"/net/"+name, maxNetTCP)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 512), 4096)
		for sc.Scan() {
			p, ok := parseListening(sc.Text(), inodes)
			if ok && !slices.Contains(out, p) && len(out) < runnerproto.MaxBgPorts {
				out = append(out, p)
			}
		}
	}
	return out
}

// parseListening reads one line of /proc/net/tcp{,6}:
//
//	sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
//	0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 0 12345 ...
//
// It is a listening socket (st 0A) of inodes: its address (hex, in host byte order per 32-bit
// word) and port (hex).
func parseListening(line string, inodes map[uint64]bool) (runnerproto.BgPort, bool) {
	f := strings.Fields(line)
	if len(f) < 10 || f[3] != "0A" {
		return runnerproto.BgPort{}, false
	}
	ino, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil || !inodes[ino] {
		return runnerproto.BgPort{}, false
	}
	hexAddr, hexPort, ok := strings.Cut(f[1], ":")
	if !ok {
		return runnerproto.BgPort{}, false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil || port == 0 {
		return runnerproto.BgPort{}, false
	}
	raw, err := hex.DecodeString(hexAddr)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return runnerproto.BgPort{}, false
	}
	// Each 32-bit word is in the kernel's byte order (little-endian on amd64 and arm64).
	for w := 0; w < len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	a, _ := netip.AddrFromSlice(raw)
	if a.Is4In6() {
		a = a.Unmap()
	}
	return runnerproto.BgPort{Port: int(port), Addr: a.String()}, true
}

// groupPorts returns the listening sockets of each process group in groups (at most
// MaxBgPorts each), as far as this runner's user can see them.
func groupPorts(groups []int) map[int][]runnerproto.BgPort {
	out := map[int][]runnerproto.BgPort{}
	for pgrp, pids := range groupMembers(groups) {
		if ports := portsOf(pids); len(ports) > 0 {
			out[pgrp] = ports
		}
	}
	return out
}

// portsOf returns the listening sockets held by pids (at most MaxBgPorts).
func portsOf(pids []int) []runnerproto.BgPort {
	inodes := map[uint64]bool{}
	for _, pid := range pids {
		socketInodes(pid, inodes)
	}
	if len(inodes) == 0 {
		return nil
	}
	// The processes' network namespaces: usually one, the first process's table answers; a
	// process in another (unshare -n) is read through its own.
	var ports []runnerproto.BgPort
	seen := map[string]bool{}
	for _, pid := range pids {
		ns, _ := os.Readlink(procRoot + "/" + strconv.Itoa(pid) + "/ns/net")
		if seen[ns] {
			continue
		}
		seen[ns] = true
		for _, p := range listeningOf(pid, inodes) {
			if !slices.Contains(ports, p) && len(ports) < runnerproto.MaxBgPorts {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// withPorts fills in the listening sockets of the statuses whose group still has members.
func withPorts(sts []*runnerproto.BgStatus) {
	var groups []int
	for _, st := range sts {
		if !st.Lost && GroupAlive(st.PID) {
			groups = append(groups, st.PID)
		}
	}
	ports := groupPorts(groups)
	for _, st := range sts {
		st.Ports = ports[st.PID]
	}
}

// readCapped reads at most max bytes of path (a /proc file: its size says nothing).
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}
