package staging

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/fsutil"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Store keeps session state on the host, under the instance's directory in LIMA_HOME, so that
// it goes away with the instance.
type Store struct {
	Dir string // $LIMA_HOME/INSTANCE/limactl-mcp
}

// StoreFor is the store of the instance whose directory is instDir.
func StoreFor(instDir string) Store {
	return Store{Dir: filepath.Join(instDir, "limactl-mcp")}
}

// State is what the host remembers of a session.
type State struct {
	ID       string `json:"id"`
	Instance string `json:"instance"`
	// Session is the session's name ("" for the unnamed one: see sessionname.go).
	Session   string `json:"session,omitempty"`
	Workdir   string `json:"workdir"`
	GuestPath string `json:"guest_path"`
	// Token is also written in the guest; a guest without it does not have this session's
	// copy (a recreated instance, a cleared disk).
	Token          string         `json:"token"`
	StagedAt       time.Time      `json:"staged_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
	Excludes       []string       `json:"excludes,omitempty"`
	IncludeIgnored bool           `json:"include_ignored,omitempty"`
	Patterns       []tree.Pattern `json:"patterns,omitempty"`
	Skipped        []string       `json:"skipped,omitempty"`
	InGitRepo      bool           `json:"in_git_repo,omitempty"`
	// Network is the session's network policy as `--network` spells it ("": open).
	Network string `json:"network,omitempty"`
	// Fork is what the session was forked from (nil: staged from the host).
	Fork *ForkOrigin `json:"fork,omitempty"`
}

// SessionID names the session of a working directory.
func SessionID(workdir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(workdir)))
	return hex.EncodeToString(sum[:6])
}

func (s Store) sessionDir(id string) string { return filepath.Join(s.Dir, "sessions", id) }

func (s Store) statePath(id string) string { return filepath.Join(s.sessionDir(id), "session.json") }
func (s Store) baselinePath(id string) string {
	return filepath.Join(s.sessionDir(id), "baseline.json.gz")
}

// SessionDir is the session's host state directory (its timeline is there: internal/timeline;
// its secrets' CA and log of uses: internal/secrets).
func (s Store) SessionDir(id string) string { return s.sessionDir(id) }

// BackupDir is where an apply keeps what it overwrote (see internal/review).
func (s Store) BackupDir(id string) string { return filepath.Join(s.sessionDir(id), "backups") }

// ErrNoSession is returned when a working directory has no session.
var ErrNoSession = errors.New("no staged session")

// Load reads the state and baseline of the unnamed session of workdir.
func (s Store) Load(workdir string) (*State, *Manifest, error) {
	return s.LoadID(SessionID(workdir))
}

// LoadSession reads the state and baseline of the session called name ("" for the unnamed
// one) of workdir.
func (s Store) LoadSession(workdir, name string) (*State, *Manifest, error) {
	return s.LoadID(SessionIDOf(workdir, name))
}

// SessionsOf lists the sessions of workdir, the unnamed one first, then by name.
func (s Store) SessionsOf(workdir string) ([]*State, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var out []*State
	for _, st := range all {
		if st.Workdir == workdir {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	return out, nil
}

// LoadID reads a session by ID.
func (s Store) LoadID(id string) (*State, *Manifest, error) {
	data, err := os.ReadFile(s.statePath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ErrNoSession
	}
	if err != nil {
		return nil, nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, nil, fmt.Errorf("session state %s is corrupt: %w", s.statePath(id), err)
	}
	m, err := LoadManifest(s.baselinePath(id))
	if err != nil {
		return nil, nil, fmt.Errorf("session baseline of %s is unreadable: %w", st.Workdir, err)
	}
	return &st, m, nil
}

// Save writes state and baseline atomically (baseline first: a state always has its baseline).
func (s Store) Save(st *State, m *Manifest) error {
	if err := os.MkdirAll(s.sessionDir(st.ID), 0o700); err != nil {
		return err
	}
	if m != nil {
		if err := m.Save(s.baselinePath(st.ID)); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(s.statePath(st.ID), data, 0o600)
}

// Remove deletes a session's state.
func (s Store) Remove(id string) error {
	return os.RemoveAll(s.sessionDir(id))
}

// List returns every session of the instance.
func (s Store) List() ([]*State, error) {
	ents, err := os.ReadDir(filepath.Join(s.Dir, "sessions"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*State
	for _, e := range ents {
		data, err := os.ReadFile(s.statePath(e.Name()))
		if err != nil {
			continue
		}
		var st State
		if json.Unmarshal(data, &st) == nil {
			out = append(out, &st)
		}
	}
	return out, nil
}

// ErrLocked is returned when another process holds a session's lock past the wait.
var ErrLocked = errors.New("another limactl-mcp is staging or applying this working directory")

// Lock takes the session's lock (staging, sync, discard and apply take it), waiting up to
// wait. It returns the function that releases it.
func (s Store) Lock(id string, wait time.Duration) (func(), error) {
	if err := os.MkdirAll(s.sessionDir(id), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.sessionDir(id), "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			_ = f.Truncate(0)
			_, _ = f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		if time.Now().After(deadline) {
			pid, _ := os.ReadFile(f.Name())
			f.Close()
			return nil, fmt.Errorf("%w (pid %s); wait for it to finish and try again", ErrLocked, string(trimNL(pid)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// ReviewBusyError is returned by ReviewLock when another review of the session holds its
// lock.
type ReviewBusyError struct {
	// PID is the holder's process id (0 when it could not be read).
	PID int
}

func (e *ReviewBusyError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("another review of this working directory is under way (pid %d)", e.PID)
	}
	return "another review of this working directory is under way"
}

// ReviewLock takes the review lock of session id, without waiting: one review at a time
// builds a changeset, lets a person decide and applies it (or undoes the last apply), so
// that a second review never applies decisions made on a changeset the first one changed.
// The lock is a file beside the session's state holding the holder's pid; the kernel lock on
// it (flock) goes with the holder's process, so a lock whose holder died is free, whatever
// pid the file still holds. It returns the function that releases it, or a
// *ReviewBusyError.
func (s Store) ReviewLock(id string) (func(), error) {
	if err := os.MkdirAll(s.sessionDir(id), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.sessionDir(id), "review.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, err
		}
		busy := &ReviewBusyError{}
		if data, err := os.ReadFile(f.Name()); err == nil {
			_, _ = fmt.Sscanf(string(data), "%d", &busy.PID)
		}
		return nil, busy
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
