package staging

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// Forks: a new named session that starts as an exact copy of another session's guest copy
// (as it is now, or at one of its checkpoints), with the same baseline, so that its review
// compares against the same host state. Several forks of one session let several agents try
// the same task from the same state; `compare` then shows how their changes differ.

// ForkOrigin is what a forked session was copied from.
type ForkOrigin struct {
	// Session is the origin's name ("" for the unnamed session).
	Session string `json:"session"`
	// ID is the origin's session id (it may be gone since).
	ID string `json:"id"`
	// Checkpoint is the origin's checkpoint the fork started from ("": its copy as it was).
	Checkpoint string    `json:"checkpoint,omitempty"`
	At         time.Time `json:"at"`
}

// ForkResult says what a fork made.
type ForkResult struct {
	Session *Session
	// Restored counts the paths the checkpoint restore changed in the new copy (0 without a
	// checkpoint).
	Restored int
	// SharedObjects is how many of the origin's checkpoint objects the new session's store
	// shares (hard links: stored once for both); SharedError says why none are, when that failed
	// (not an error of the fork: the new session's first checkpoint then stores its own).
	SharedObjects int
	SharedError   string
	// Seeded counts the files whose content the new session's store knows without its first
	// checkpoint reading them (copies of origin files unchanged since the origin's checkpoint).
	Seeded   int
	Duration time.Duration
}

// ErrSessionExists is returned for a fork whose name is already a session of the directory.
var ErrSessionExists = errors.New("session already exists")

// forkCopyWait bounds the guest's copy of a staged tree (the staging limit is 4 GiB).
const forkCopyWait = 10 * time.Minute

// Fork makes the session called name of s's working directory: a copy of s's guest copy (at
// checkpoint, when not ""), with s's baseline and ignore rules. The caller holds s's lock, so
// that no sync, apply or restore changes s meanwhile (the agent may still write: the copy is
// of the tree as cp reads it).
//
// The copy is made in the guest by `cp -a --reflink=auto`: on a filesystem with reflinks
// (btrfs, XFS) the files share their blocks until either side writes; elsewhere (ext4, Lima's
// default images) every file is copied. The files are never hard links to the origin's or to
// the checkpoint store's: an in-place write (`>>`, gofmt -w, an editor that does not rename)
// by one agent would then change the other session's file, or the content a checkpoint
// promises to put back. What is shared by hard links is the checkpoint store's objects, which
// nothing writes in place (the runner writes an object once, by rename, and checks its hash
// before every restore): the new session's checkpoints store only what differs.
//
// A session under a network policy is forked by forkUnderPolicy, with conns: its copy belongs
// to its agent user, and the fork gets an agent user of its own (a fork of an open session
// needs no conns).
func (s *Session) Fork(ctx context.Context, name, checkpoint string, conns ForkConns) (*ForkResult, error) {
	start := time.Now()
	if name == "" {
		return nil, errors.New("a fork needs a session name of its own (the unnamed session is the one `limactl mcp serve` makes without --session)")
	}
	if _, err := ParseSessionName(name); err != nil {
		return nil, err
	}
	if name == s.State.Session {
		return nil, fmt.Errorf("cannot fork session %s into itself: name another session", SessionLabel(name))
	}
	policy := NetworkOf(s.State) != OpenNetwork
	if policy {
		if conns.Lima == nil || conns.Agent == nil {
			return nil, fmt.Errorf("session %s works under the network policy %q: its fork needs the Lima user's connection and one for the new session's agent", SessionLabel(s.State.Session), s.State.Network)
		}
	}
	if checkpoint != "" {
		l, err := s.Checkpoints(ctx)
		if err != nil {
			return nil, err
		}
		found := false
		for _, c := range l.Checkpoints {
			found = found || c.ID == checkpoint
		}
		if !found {
			return nil, s.unknownCheckpoint(ctx, checkpoint)
		}
	}
	id := SessionIDOf(s.State.Workdir, name)
	unlock, err := s.store.Lock(id, time.Minute)
	if err != nil {
		return nil, err
	}
	defer unlock()
	switch _, _, err := s.store.LoadID(id); {
	case err == nil:
		return nil, fmt.Errorf("%w: %s already has a session %q in instance %q: discard it first (`limactl mcp discard %s --session %s`) or pick another name", ErrSessionExists, s.State.Workdir, name, s.State.Instance, s.State.Instance, name)
	case !errors.Is(err, ErrNoSession):
		return nil, err
	}
	if policy {
		return s.forkUnderPolicy(ctx, name, id, checkpoint, conns, start)
	}
	home, err := s.conn.Home(ctx)
	if err != nil {
		return nil, err
	}
	guestPath, _ := SessionGuestPath(s.State.Workdir, name, home, id)
	st := s.forkState(id, name, guestPath, checkpoint)
	base := &Manifest{Entries: append(s.Baseline.Entries[:0:0], s.Baseline.Entries...)}
	fork := &Session{conn: s.conn, store: s.store, State: st, Baseline: base}
	res := &ForkResult{Session: fork}

	if err := prepareGuestDir(ctx, s.conn, guestPath); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			// Nothing half made stays: the copy, the checkpoint store begun, the state.
			cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			_ = fork.removeGuestCopy(cleanup)
			_ = fork.removeCheckpoints(cleanup)
			_ = s.store.Remove(id)
		}
	}()
	// The copy, and the sharing of the checkpoint objects, in one round trip.
	src, dst := shellquote.Quote(s.State.GuestPath+"/."), shellquote.Quote(guestPath+"/")
	var out []byte
	err = s.conn.Within(ctx, forkCopyWait, "copying the session's guest copy", func(ctx context.Context) error {
		var err error
		out, err = s.conn.Stream(ctx, "set -e\ncp -a --reflink=auto -- "+src+" "+dst+"\nset +e\n"+shareObjectsScript(home, s.State.ID, id), nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("copying %s to %s in the guest: %w", s.State.GuestPath, guestPath, err)
	}
	res.SharedObjects, res.SharedError = sharedCount(out)
	if checkpoint != "" {
		// The origin's store, restored into the new copy: the origin's copy is not touched.
		tr := s.checkpointTree()
		tr.Root = guestPath
		// The copy's files that are copies of origin files unchanged since the checkpoint are
		// not read, and the new store learns their content (internal/runner/checkpoint/seed.go).
		r, err := s.conn.CkptRestore(ctx, runnerproto.CkptRestoreRequest{Tree: tr, ID: checkpoint, MaxChanges: maxRestoreChanges, CopiedFrom: s.State.GuestPath, Seed: id})
		if err := s.forkRestoreError(ctx, checkpoint, guestPath, r, err); err != nil {
			return nil, err
		}
		res.Restored, res.Seeded = r.Total, r.Seeded
	} else if r, err := s.conn.CkptSeed(ctx, runnerproto.CkptSeedRequest{Tree: fork.checkpointTree(), Origin: s.State.GuestPath, OriginSession: s.State.ID}); err == nil {
		// Not an error of the fork without it (an older runner): the first checkpoint of the
		// new session then reads every file.
		res.Seeded = r.Seeded
	}
	if err := fork.finishFork(ctx); err != nil {
		return nil, err
	}
	ok = true
	res.Duration = time.Since(start)
	return res, nil
}

// forkRestoreError is the error of the restore of checkpoint (s's) into a fork's new copy at
// guestPath: r and err are the runner's answer (nil when it went well).
func (s *Session) forkRestoreError(ctx context.Context, checkpoint, guestPath string, r *runnerproto.CkptRestoreResult, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("putting the fork at checkpoint %s: %w", checkpoint, err)
	case r.RootMissing:
		return fmt.Errorf("putting the fork at checkpoint %s: the new copy %s is gone from the guest", checkpoint, guestPath)
	case r.Unknown:
		return s.unknownCheckpoint(ctx, checkpoint)
	}
	return nil
}

// finishFork makes the copy of s, a fork, a session: its marker written, its room closed, its
// state saved.
func (s *Session) finishFork(ctx context.Context) error {
	if err := s.writeMarker(ctx); err != nil {
		return err
	}
	if err := s.closeRoom(ctx); err != nil {
		return err
	}
	return s.store.Save(s.State, s.Baseline)
}

// forkState is the state of the fork called name (session id, its copy at guestPath) of s: s's,
// with an identity, a copy and a token of its own, and where it came from.
func (s *Session) forkState(id, name, guestPath, checkpoint string) *State {
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	st := *s.State
	st.ID, st.Session, st.GuestPath, st.Token = id, name, guestPath, hex.EncodeToString(tok)
	st.Fork = &ForkOrigin{Session: s.State.Session, ID: s.State.ID, Checkpoint: checkpoint, At: time.Now().UTC()}
	// The patterns and skipped paths are shared with the origin's state: copy the slices.
	st.Excludes = append([]string(nil), s.State.Excludes...)
	st.Patterns = append(st.Patterns[:0:0], s.State.Patterns...)
	st.Skipped = append([]string(nil), s.State.Skipped...)
	return &st
}

// shareObjectsScript hard-links the objects of the origin's checkpoint store (session from)
// into the store of session to, so that the new session's checkpoints do not store a second
// copy of content the origin already has (a checkpoint stores an object only when its hash is
// not in the store yet). It prints "shared N", or "not shared: WHY". Links to objects only:
// the runner never writes an object in place (internal/runner/checkpoint), and verifies each
// one's hash and size before a restore uses it.
func shareObjectsScript(home, from, to string) string {
	q := shellquote.Quote(path.Join(home, checkpointStoreRel, from, "objects"))
	qd := shellquote.Quote(path.Join(home, checkpointStoreRel, to))
	// find -type f: a regular file with a hash's name (never a link, a directory or a
	// temporary file); ln without -s or -L links the file found, never what a name points to.
	return `if [ ! -d ` + q + ` ]; then echo "shared 0"; exit 0; fi
if mkdir -p -m 700 ` + qd + ` ` + qd + `/objects ` + qd + `/manifests &&
  find ` + q + ` -mindepth 1 -maxdepth 1 -type f -regextype posix-extended -regex '.*/[0-9a-f]{64}' -exec ln -f -t ` + qd + `/objects -- {} + 2>/dev/null; then
  echo "shared $(find ` + qd + `/objects -mindepth 1 -maxdepth 1 -type f | wc -l)"
else
  echo "not shared: linking the objects failed (a filesystem without hard links, or the store changed meanwhile)"
fi
`
}

// sharedCount reads shareObjectsScript's answer.
func sharedCount(out []byte) (int, string) {
	line := strings.TrimSpace(string(out))
	if why, ok := strings.CutPrefix(line, "not shared: "); ok {
		return 0, why
	}
	var n int
	if _, err := fmt.Sscanf(line, "shared %d", &n); err != nil || n < 0 {
		if len(line) > 80 {
			line = line[:80]
		}
		return 0, fmt.Sprintf("unexpected answer %q", line)
	}
	return n, ""
}
