package enforce

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// maxLogSize is where a user's log is rotated to NAME.jsonl.1 (keeping one old file): the
// log is bounded whatever the agent does. What it reached is kept apart, in the user's Totals.
const maxLogSize = 1 << 20

const (
	// totalsEvery is how often, at most, a user's totals are written for refused attempts
	// alone (a connection made is written at once).
	totalsEvery = time.Second
	// The raw log takes refused attempts at most refusedBurst at once per destination, then one
	// per refusedEvery, and at most userRefusedBurst at once per user, then userRefusedRate a
	// second; the others are counted (Totals.Suppressed) instead of written.
	refusedBurst     = 3
	refusedEvery     = 10 * time.Second
	userRefusedBurst = 50
	userRefusedRate  = 5
	// maxLimitedDests bounds the destinations remembered per user (then they start afresh).
	maxLimitedDests = 4096
)

// logBook writes the users' logs, keeping each open between lines, and their totals.
type logBook struct {
	dir     string
	maxSize int64
	now     func() time.Time
	mu      sync.Mutex
	files   map[string]*os.File
	totals  map[string]*userTotals
	timer   *time.Timer
	closed  bool
}

// userTotals is a user's record in memory, and what limits its refused lines.
type userTotals struct {
	t       *netpolicy.Totals
	dirty   bool
	written time.Time
	dests   map[string]*tokens // refused lines per destination
	all     tokens             // refused lines of the user
}

// tokens is a token bucket: n tokens at time at.
type tokens struct {
	n  float64
	at time.Time
}

// take takes a token if there is one, refilling at rate a second up to burst.
func (k *tokens) take(now time.Time, burst, rate float64) bool {
	if k.at.IsZero() {
		k.n = burst
	} else {
		k.n = min(burst, k.n+now.Sub(k.at).Seconds()*rate)
	}
	k.at = now
	if k.n < 1 {
		return false
	}
	k.n--
	return true
}

func newLogBook(dir string) *logBook {
	return &logBook{dir: dir, maxSize: maxLogSize, now: time.Now, files: map[string]*os.File{}, totals: map[string]*userTotals{}}
}

// write counts e in user's totals and appends it to user's log (a refused attempt past the
// rate limit is counted only), rotating the log first when it would grow past maxSize.
func (b *logBook) write(user string, e netpolicy.Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	b.mu.Lock()
	defer b.mu.Unlock()
	ut, err := b.userTotals(user)
	if err != nil {
		return err
	}
	ut.t.Add(e)
	ut.dirty = true
	if e.Verdict == netpolicy.VerdictAllowed && e.Reason == "" {
		// A connection made is what the record is for: written now.
		if err := b.flush(user, ut); err != nil {
			return err
		}
	} else {
		b.scheduleFlush()
	}
	if e.Verdict == netpolicy.VerdictBlocked && !ut.allowLine(e, b.now()) {
		ut.t.Suppressed++
		return nil
	}
	return b.appendLine(user, line)
}

// allowLine is the rate limit of refused lines.
func (ut *userTotals) allowLine(e netpolicy.Entry, now time.Time) bool {
	dest := e.Via + " " + e.Host + " " + strconv.Itoa(e.Port)
	k, ok := ut.dests[dest]
	if !ok {
		if len(ut.dests) >= maxLimitedDests {
			ut.dests = map[string]*tokens{}
		}
		k = &tokens{}
		ut.dests[dest] = k
	}
	if !k.take(now, refusedBurst, 1/refusedEvery.Seconds()) {
		return false
	}
	return ut.all.take(now, userRefusedBurst, userRefusedRate)
}

// userTotals returns user's record, read from its file the first time.
func (b *logBook) userTotals(user string) (*userTotals, error) {
	if ut, ok := b.totals[user]; ok {
		return ut, nil
	}
	if err := ensureRootDir(b.dir); err != nil {
		return nil, err
	}
	t, _, err := readTotals(filepath.Join(b.dir, user+".totals.json"))
	if err != nil {
		// Not this version's, or damaged: start a new record (the old file is kept aside).
		fmt.Fprintf(os.Stderr, "limactl-mcp netproxy: %v: starting a new record\n", err)
		path := filepath.Join(b.dir, user+".totals.json")
		_ = os.Rename(path, path+".bad")
		t = netpolicy.NewTotals()
	}
	ut := &userTotals{t: t, dests: map[string]*tokens{}}
	b.totals[user] = ut
	return ut, nil
}

// flush writes user's totals if they changed.
func (b *logBook) flush(user string, ut *userTotals) error {
	if !ut.dirty {
		return nil
	}
	if err := writeTotals(filepath.Join(b.dir, user+".totals.json"), ut.t); err != nil {
		return fmt.Errorf("writing the network record of %s: %w", user, err)
	}
	ut.dirty, ut.written = false, b.now()
	return nil
}

// scheduleFlush makes sure the changed totals are written within totalsEvery.
func (b *logBook) scheduleFlush() {
	if b.timer != nil || b.closed {
		return
	}
	b.timer = time.AfterFunc(totalsEvery, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.timer = nil
		b.flushAll()
	})
}

func (b *logBook) flushAll() {
	for user, ut := range b.totals {
		if err := b.flush(user, ut); err != nil {
			fmt.Fprintf(os.Stderr, "limactl-mcp netproxy: %v\n", err)
		}
	}
}

// appendLine appends a line to user's log, rotating it first when needed.
func (b *logBook) appendLine(user string, line []byte) error {
	f, err := b.open(user)
	if err != nil {
		return err
	}
	if st, err := f.Stat(); err == nil && st.Size() > 0 && st.Size()+int64(len(line)) > b.maxSize {
		path := f.Name()
		f.Close()
		delete(b.files, user)
		if err := os.Rename(path, path+".1"); err != nil {
			return fmt.Errorf("rotating %s: %w", path, err)
		}
		if f, err = b.open(user); err != nil {
			return err
		}
	}
	_, err = f.Write(line)
	return err
}

// open returns user's log file, opening (or creating, 0600, root's: no agent reads another's
// log) it if needed; a file that was removed or rotated by someone else is opened anew.
func (b *logBook) open(user string) (*os.File, error) {
	path := filepath.Join(b.dir, user+".jsonl")
	if f, ok := b.files[user]; ok {
		if held, err1 := f.Stat(); err1 == nil {
			if onDisk, err2 := os.Lstat(path); err2 == nil && os.SameFile(held, onDisk) {
				return f, nil
			}
		}
		f.Close()
		delete(b.files, user)
	}
	if err := ensureRootDir(b.dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the log: %w", err)
	}
	// A log an earlier version made readable by all is made root's alone.
	if st, err := f.Stat(); err == nil && st.Mode().Perm() != 0o600 {
		_ = f.Chmod(0o600)
	}
	b.files[user] = f
	return f, nil
}

// close writes every changed record and closes every open log.
func (b *logBook) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.flushAll()
	for u, f := range b.files {
		f.Close()
		delete(b.files, u)
	}
}
