package timeline

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/fsutil"
)

// The files of a timeline, in the session's host directory.
const (
	FileName   = "timeline.jsonl"
	OldName    = "timeline.jsonl.1" // the generation before, dropped at the next rotation
	TotalsName = "timeline-totals.json"
	lockName   = "timeline.lock"
)

// Defaults for a Log.
const (
	// DefaultMaxBytes is the size at which the current file is rotated: a timeline keeps at
	// most about twice this (two generations), and totals for the rest.
	DefaultMaxBytes = 8 << 20
	// MaxLineBytes caps one event: a bigger one loses its arguments (Note says so).
	MaxLineBytes = 16 << 10
	// maxErrorBytes caps an event's error text.
	maxErrorBytes = 1024
)

// Log appends events to one session's timeline. A nil *Log records nothing. Safe for
// concurrent use; several processes may append to the same timeline.
type Log struct {
	dir    string
	source string
	pid    int
	red    *Redactor
	// MaxBytes is the size at which the file rotates (DefaultMaxBytes when 0).
	MaxBytes int64

	mu     sync.Mutex
	lock   *os.File // the timeline's lock file (openLock)
	failed bool     // the last write failed: said once, not on every call
	// OnError is told a write's failure once (until a write succeeds again); nil: ignored.
	OnError func(error)
}

// Open returns the Log of the timeline in dir (the session's host directory), written as
// source ("serve", "shell", ...). It touches nothing until the first event; red may be nil.
func Open(dir, source string, red *Redactor) *Log {
	return &Log{dir: dir, source: source, pid: os.Getpid(), red: red}
}

// Dir is the directory the timeline is in.
func (l *Log) Dir() string { return l.dir }

// Redactor is what the log redacts (nil: nothing but what Summarise cuts).
func (l *Log) Redactor() *Redactor {
	if l == nil {
		return nil
	}
	return l.red
}

// Record appends e (its Time defaults to now). A failure to write is reported to OnError, and
// never fails the caller's work: the timeline is a record, not a gate.
func (l *Log) Record(e Event) {
	if l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	if e.Source == "" {
		e.Source = l.source
	}
	if e.PID == 0 {
		e.PID = l.pid
	}
	line := l.encode(&e)
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.append(line)
	if err != nil && !l.failed && l.OnError != nil {
		l.OnError(err)
	}
	l.failed = err != nil
}

// encode redacts and caps e and gives its line (with the newline).
func (l *Log) encode(e *Event) []byte {
	e.Command = l.red.String(e.Command)
	e.Error = capString(l.red.String(e.Error), maxErrorBytes)
	e.Note = l.red.String(e.Note)
	e.Dir = l.red.String(e.Dir)
	e.Host = l.red.String(e.Host)
	for i, p := range e.Paths {
		e.Paths[i] = l.red.String(p)
	}
	if e.Args != nil {
		e.Args = l.red.Value(e.Args).(map[string]any)
	}
	data, err := json.Marshal(e)
	if err != nil || len(data) >= MaxLineBytes {
		n := len(data)
		e.Args = map[string]any{"cut": true}
		if len(e.Command) > 4096 {
			e.Command = capString(e.Command, 4096)
		}
		if len(e.Paths) > 50 {
			e.Note = fmt.Sprintf("%d paths; the first 50 kept", len(e.Paths))
			e.Paths = e.Paths[:50]
		}
		if err != nil {
			e.Note = "arguments not recorded: " + err.Error()
		} else if e.Note == "" {
			e.Note = fmt.Sprintf("arguments not recorded: the event took %d bytes (at most %d)", n, MaxLineBytes)
		}
		data, _ = json.Marshal(e)
	}
	return append(data, '\n')
}

func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes cut)", len(s)-n)
}

func (l *Log) maxBytes() int64 {
	if l.MaxBytes > 0 {
		return l.MaxBytes
	}
	return DefaultMaxBytes
}

// append writes line at the end of the current file in one write(2), and rotates the file
// once it is past its size. The file is opened for each event (no descriptor is held across
// another process's rotation); that costs a few system calls, measured in docs/benchmarks.md.
//
// The write holds the timeline's lock shared, and a rotation holds it exclusive: a writer
// that opened the current file just before one rotation and wrote just after a second would
// otherwise add its line to a generation already counted and dropped (a line was lost so in
// TestConcurrentWritersKeepLinesWhole on a loaded machine).
func (l *Log) append(line []byte) error {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return err
	}
	lock, err := l.holdLock(syscall.LOCK_SH)
	if err != nil {
		return err
	}
	defer flock(lock, syscall.LOCK_UN) //nolint:errcheck
	path := filepath.Join(l.dir, FileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(line)
	var size int64
	if fi, serr := f.Stat(); serr == nil {
		size = fi.Size()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if size > l.maxBytes() {
		return l.rotate(lock)
	}
	return nil
}

// holdLock takes the timeline's lock (how: shared or exclusive) and gives its file. The file
// kept open (openLock) is checked to be the one at its path once locked: a session directory
// removed and made again (discard, then a new session of the same name) has a new lock file,
// and a writer still locking the old one would exclude no one. Then it opens the new one.
func (l *Log) holdLock(how int) (*os.File, error) {
	for try := 0; ; try++ {
		lock, err := l.openLock()
		if err != nil {
			return nil, err
		}
		if err := flock(lock, how); err != nil {
			return nil, err
		}
		if try == 2 || l.lockIsCurrent(lock) { // a directory made again and again: write anyway
			return lock, nil
		}
		flock(lock, syscall.LOCK_UN) //nolint:errcheck
		lock.Close()
		l.lock = nil
		if err := os.MkdirAll(l.dir, 0o700); err != nil {
			return nil, err
		}
	}
}

// lockIsCurrent says whether lock is still the file at the lock's path.
func (l *Log) lockIsCurrent(lock *os.File) bool {
	held, err := lock.Stat()
	if err != nil {
		return false
	}
	now, err := os.Lstat(filepath.Join(l.dir, lockName))
	return err == nil && os.SameFile(held, now)
}

// openLock gives the timeline's lock file, opened once per Log (under l.mu) and kept (opening
// it for each event doubled the cost of the append); holdLock opens it again when the session
// directory was made again.
func (l *Log) openLock() (*os.File, error) {
	if l.lock != nil {
		return l.lock, nil
	}
	f, err := os.OpenFile(filepath.Join(l.dir, lockName), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	l.lock = f
	return f, nil
}

// flock takes how on f, again when a signal interrupts the wait. The lock is held only for an
// open and a write (or one rotation), so the wait is that long.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Totals is what the timeline-totals file keeps: the counts of the generations rotation
// dropped.
type Totals struct {
	Dropped Counts `json:"dropped"`
	// Generations is how many generations were dropped.
	Generations int `json:"generations"`
	// LastDropped identifies the last line of the generation counted last (a hash), so that
	// a rotation interrupted between counting it and removing it never counts it twice.
	LastDropped string `json:"last_dropped,omitempty"`
}

// rotate moves the current file to OldName, after adding the old generation's counts to the
// totals, holding lock (the timeline's, held shared by the caller) exclusive. Another process
// that rotated meanwhile: nothing to do.
func (l *Log) rotate(lock *os.File) error {
	if err := flock(lock, syscall.LOCK_EX); err != nil {
		return err
	}
	cur := filepath.Join(l.dir, FileName)
	if fi, err := os.Lstat(cur); err != nil || fi.Size() <= l.maxBytes() {
		return nil // rotated meanwhile
	}
	old := filepath.Join(l.dir, OldName)
	tot, err := readTotals(l.dir)
	if err != nil {
		return err
	}
	c, last, err := countFile(old)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case last != tot.LastDropped:
		tot.Dropped.Merge(c)
		tot.Generations++
		tot.LastDropped = last
		data, _ := json.Marshal(tot)
		if err := fsutil.WriteFileAtomic(filepath.Join(l.dir, TotalsName), data, 0o600); err != nil {
			return err
		}
	}
	return os.Rename(cur, old)
}

func readTotals(dir string) (Totals, error) {
	var t Totals
	data, err := os.ReadFile(filepath.Join(dir, TotalsName))
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("timeline totals %s are corrupt: %w", filepath.Join(dir, TotalsName), err)
	}
	return t, nil
}

// countFile counts the events of a timeline file and identifies its last line.
func countFile(path string) (Counts, string, error) {
	var c Counts
	last := ""
	err := scanFile(path, 0, func(e *Event, line []byte) {
		c.Add(e)
		last = lineID(line)
	}, nil)
	return c, last, err
}

func lineID(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:12])
}

// scanFile calls fn for each whole event line of path from offset; a line that does not
// parse (a torn write of a process killed mid-line can only be the last) is counted in bad.
// It returns the offset after the last whole line.
func scanFile(path string, offset int64, fn func(*Event, []byte), bad *int) error {
	_, err := scanFrom(path, offset, fn, bad)
	return err
}

func scanFrom(path string, offset int64, fn func(*Event, []byte), bad *int) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return offset, err
	}
	defer f.Close()
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return offset, err
		}
	}
	r := bufio.NewReaderSize(f, 64<<10)
	pos := offset
	for {
		line, n, complete, err := readLine(r, MaxLineBytes*4)
		if complete {
			pos += n
			var e Event
			if line != nil && json.Unmarshal(line, &e) == nil && e.Kind != "" {
				fn(&e, line)
			} else if bad != nil {
				*bad++
			}
		}
		if err == io.EOF {
			return pos, nil
		}
		if err != nil {
			return pos, err
		}
	}
}

// readLine reads one line ending in a newline: its text without the newline (nil for a line longer
// than max, whose rest is skipped), the bytes it took, and whether it was whole (a last line
// without its newline is not: a write under way, or torn by a kill).
func readLine(r *bufio.Reader, max int) ([]byte, int64, bool, error) {
	var out []byte
	var n int64
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		n += int64(len(chunk))
		if !tooLong && len(out)+len(chunk) <= max+1 {
			out = append(out, chunk...)
		} else {
			tooLong, out = true, nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, n, false, err
		}
		if tooLong {
			return nil, n, true, nil
		}
		return out[:len(out)-1], n, true, nil
	}
}

// OpenHost is Open for a command of the person's (serve, shell, review, restore, sync):
// the values of the host's secret-looking environment variables are redacted (FromEnviron).
func OpenHost(dir, source string) *Log {
	return Open(dir, source, FromEnviron(os.Environ()))
}
