package enforce

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
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
//
// Bounded by work, not by a tight clock: so many processes, so many of the uid's (the newest),
// so many descriptors each and in all, so many looks per uid a second (an agent that makes thousands of refused attempts makes
// the root proxy scan /proc no more than that). The newest processes are looked at first (by
// id, from the last one given out: ids wrap around): the command that has just connected is
// almost always among them, so a look usually ends after a few. A clock bound remains, loose, so that nothing hangs; a 25 ms one ran out on a loaded
// machine (a software-emulated guest beside a CI run) before the scan reached the agent's curl.

const (
	maxPeerProcs = 4096 // entries of /proc read
	maxPeerOwn   = 256  // processes of the uid whose descriptors are read, the newest
	maxPeerFDs   = 1024 // descriptors of one process read
	maxPeerLinks = 4096 // descriptors read in one look, over all the processes
	// peerLookTimeout bounds a look that the work bounds have not ended.
	peerLookTimeout = time.Second
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
	deadline := time.Now().Add(peerLookTimeout)
	want := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	look := &peerLook{uid: uid, want: want, deadline: deadline, own: maxPeerOwn, links: maxPeerLinks}
	for _, pid := range newestFirst(procPIDs(), lastPID()) {
		if look.spent() {
			return ""
		}
		if look.holds(pid) {
			return cmdline(pid)
		}
	}
	return ""
}

// procPIDs are the process ids of /proc, at most maxPeerProcs of them.
func procPIDs() []int {
	dir, err := os.Open(procRoot)
	if err != nil {
		return nil
	}
	defer dir.Close()
	var pids []int
	for len(pids) < maxPeerProcs {
		names, err := dir.Readdirnames(256)
		for _, name := range names {
			if pid, err := strconv.Atoi(name); err == nil && pid > 0 && len(pids) < maxPeerProcs {
				pids = append(pids, pid)
			}
		}
		if err != nil || len(names) == 0 {
			break
		}
	}
	return pids
}

// newestFirst orders pids from the newest down, last the last pid given out (0: unknown):
// from last down to 1, then from the highest down to last. Process ids wrap around (at 32,768
// on many machines, soon reached by builds and tests), and after a wrap the highest ids are
// the oldest: ordered by id alone, a crowd of an agent's older processes came before its new
// curl and used up the look (a CI run).
func newestFirst(pids []int, last int) []int {
	slices.SortFunc(pids, func(a, b int) int {
		if (a <= last) != (b <= last) {
			if a <= last {
				return -1
			}
			return 1
		}
		return b - a
	})
	return pids
}

// lastPID is the last process id the kernel gave out (0 when it cannot be read).
func lastPID() int {
	b, err := os.ReadFile(procRoot + "/sys/kernel/ns_last_pid")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// peerLook is one look for the process that holds a socket: what it looks for and what it
// has left to spend.
type peerLook struct {
	uid      int
	want     string // the link of the descriptor: socket:[INODE]
	deadline time.Time
	own      int // processes of the uid it may still read the descriptors of
	links    int // descriptors it may still read
}

// spent tells whether the look has used up its bounds.
func (l *peerLook) spent() bool {
	return l.own <= 0 || l.links <= 0 || time.Now().After(l.deadline)
}

// holds tells whether the process pid is the uid's and holds the descriptor that links to
// the socket.
func (l *peerLook) holds(pid int) bool {
	base := procRoot + "/" + strconv.Itoa(pid)
	st, err := os.Lstat(base)
	if err != nil {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != l.uid {
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
	if len(names) > 0 {
		// Only a process with descriptors counts: one that is ending (a zombie) holds none.
		l.own--
	}
	for _, fd := range names {
		if l.spent() {
			return false
		}
		l.links--
		if link, err := os.Readlink(base + "/fd/" + fd); err == nil && link == l.want {
			return true
		}
	}
	return false
}

// cmdline is the command line of pid, its arguments joined by spaces, valid UTF-8, capped at
// netpolicy.MaxEntryCommand bytes.
func cmdline(pid int) string {
	f, err := os.Open(procRoot + "/" + strconv.Itoa(pid) + "/cmdline")
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
