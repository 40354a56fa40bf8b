package netpolicy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Entry is one line of a user's log: one attempt to reach a host.
type Entry struct {
	Time      time.Time `json:"time"`
	Host      string    `json:"host"`
	Port      int       `json:"port"`
	Verdict   string    `json:"verdict"` // VerdictAllowed or VerdictBlocked
	Via       string    `json:"via"`     // ViaProxy or ViaDirect
	BytesUp   int64     `json:"bytes_up"`
	BytesDown int64     `json:"bytes_down"`
	Reason    string    `json:"reason,omitempty"`
}

const (
	VerdictAllowed = "allowed"
	VerdictBlocked = "blocked"
	ViaProxy       = "proxy"  // the proxy decided
	ViaDirect      = "direct" // the firewall refused a connection that did not use the proxy
)

// maxLogSize is where a user's log is rotated to NAME.jsonl.1 (keeping one old file): the
// log is bounded whatever the agent does.
const maxLogSize = 1 << 20

// logBook writes the users' logs, keeping each open between lines.
type logBook struct {
	dir     string
	maxSize int64
	mu      sync.Mutex
	files   map[string]*os.File
}

func newLogBook(dir string) *logBook {
	return &logBook{dir: dir, maxSize: maxLogSize, files: map[string]*os.File{}}
}

// write appends e to user's log, rotating it first when it would grow past maxSize.
func (b *logBook) write(user string, e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	b.mu.Lock()
	defer b.mu.Unlock()
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

// open returns user's log file, opening (or creating, 0644, root's) it if needed; a file
// that was removed or rotated by someone else is opened anew.
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log: %w", err)
	}
	b.files[user] = f
	return f, nil
}

// close closes every open log.
func (b *logBook) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for u, f := range b.files {
		f.Close()
		delete(b.files, u)
	}
}
