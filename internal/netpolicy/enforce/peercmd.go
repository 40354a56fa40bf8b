package enforce

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// The command that made a refused attempt, for the record (`watch` shows it beside the
// destination): the process of the agent's uid that holds the client's socket (its inode, from
// sock_diag: peer), found by reading /proc/PID/fd of that uid's processes, and its command line.
// Only read, never acted on: the links of /proc/PID/fd are the kernel's, and the command line
// is the agent's to write (what it shows is text of the agent's, shown escaped on the host).
// Bounded: so many processes, so many descriptors each, so much time, so many looks per uid a
// second (an agent that makes thousands of refused attempts makes the root proxy scan /proc
// no more than that); a look that runs out says nothing.

const (
	maxPeerProcs   = 4096 // entries of /proc read
	maxPeerFDs     = 1024 // descriptors of one process read
	peerLookBudget = 25 * time.Millisecond
	// peerLooksPerSecond bounds the looks for one uid in one second.
	peerLooksPerSecond = 5
	maxCmdlineRead     = 4096
)

// procRoot is where the processes are.
const procRoot = "/proc"

// peerLooks counts the looks of each uid in the current second.
type peerLooks struct {
	mu     sync.Mutex
	second int64
	n      map[int]int
}

func (l *peerLooks) allow(uid int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now().Unix()
	if now != l.second || l.n == nil {
		l.second, l.n = now, map[int]int{}
	}
	if l.n[uid] >= peerLooksPerSecond {
		return false
	}
	l.n[uid]++
	return true
}

// commandOf is the command line of the process of uid that holds the socket inode ("" when no
// such process is found within the bounds).
func commandOf(uid int, inode uint32) string {
	if uid < 0 || inode == 0 {
		return ""
	}
	deadline := time.Now().Add(peerLookBudget)
	want := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	dir, err := os.Open(procRoot)
	if err != nil {
		return ""
	}
	defer dir.Close()
	seen := 0
	for seen < maxPeerProcs && time.Now().Before(deadline) {
		names, err := dir.Readdirnames(256)
		seen += len(names)
		for _, name := range names {
			if _, err := strconv.Atoi(name); err != nil {
				continue
			}
			if pidHolds(name, uid, want, deadline) {
				return cmdline(name)
			}
		}
		if err != nil {
			break
		}
	}
	return ""
}

// pidHolds tells whether the process pid (a name of /proc) is uid's and holds the descriptor
// that links to want.
func pidHolds(pid string, uid int, want string, deadline time.Time) bool {
	base := procRoot + "/" + pid
	st, err := os.Lstat(base)
	if err != nil {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != uid {
		return false
	}
	fds, err := os.Open(base + "/fd")
	if err != nil {
		return false
	}
	defer fds.Close()
	names, err := fds.Readdirnames(maxPeerFDs)
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	for _, fd := range names {
		if time.Now().After(deadline) {
			return false
		}
		if link, err := os.Readlink(base + "/fd/" + fd); err == nil && link == want {
			return true
		}
	}
	return false
}

// cmdline is the command line of pid, its arguments joined by spaces, valid UTF-8, capped at
// netpolicy.MaxEntryCommand bytes.
func cmdline(pid string) string {
	f, err := os.Open(procRoot + "/" + pid + "/cmdline")
	if err != nil {
		return ""
	}
	defer f.Close()
	raw, _ := io.ReadAll(io.LimitReader(f, maxCmdlineRead))
	return formatCmdline(raw)
}

// formatCmdline is a /proc/PID/cmdline (arguments ended by NULs) as one line: the arguments
// joined by spaces, valid UTF-8, at most netpolicy.MaxEntryCommand bytes ("..." when cut).
func formatCmdline(raw []byte) string {
	raw = bytes.TrimRight(raw, "\x00")
	s := strings.ToValidUTF8(string(bytes.ReplaceAll(raw, []byte{0}, []byte{' '})), "\uFFFD")
	if len(s) > netpolicy.MaxEntryCommand {
		cut := netpolicy.MaxEntryCommand - len("...")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
