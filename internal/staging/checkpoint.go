package staging

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Checkpoints are snapshots of the guest copy, taken and restored by the runner in the guest
// (internal/runner/ckpt*.go). They cover what change detection sees (the session's ignore
// rules apply), less every .git; a restore changes only the guest copy, never the host: the
// pending changes then follow what the copy holds.

// CheckpointLimits bound a session's checkpoints: the staged tree's own bound on entries, 2 GiB
// of stored content, the last 10 automatic checkpoints and the last 50 asked for.
var CheckpointLimits = runnerproto.CkptLimits{MaxEntries: 200_000, MaxStoreBytes: 2 << 30, MaxAuto: 10, MaxLabelled: 50}

// checkpointStoreRel is where the runner keeps the stores, under its user's home (one
// directory per session id: internal/runner/checkpoint/store.go).
const checkpointStoreRel = ".cache/limactl-mcp/checkpoints"

// maxRestoreChanges is how many changes a restore lists (it makes them all).
const maxRestoreChanges = 2000

// ErrUnknownCheckpoint is returned for a checkpoint id the session does not have.
var ErrUnknownCheckpoint = errors.New("no such checkpoint")

// CheckpointRefusedError says why a checkpoint was not taken, and what to do.
type CheckpointRefusedError struct{ Reason string }

func (e *CheckpointRefusedError) Error() string { return e.Reason }

// checkpointTree is what a checkpoint of the session covers: the tree change detection scans.
func (s *Session) checkpointTree() runnerproto.CkptTree {
	req := s.scanRequest()
	return runnerproto.CkptTree{Session: s.State.ID, Root: s.State.GuestPath, Patterns: req.Patterns, Keep: req.Keep}
}

// Checkpoint takes a checkpoint of the guest copy. auto marks the ones taken before a review
// apply or a sync (pruned first).
func (s *Session) Checkpoint(ctx context.Context, label string, auto bool) (*runnerproto.CkptCreateResult, error) {
	res, err := s.conn.CkptCreate(ctx, runnerproto.CkptCreateRequest{Tree: s.checkpointTree(), Label: label, Auto: auto, Limits: CheckpointLimits})
	if err != nil {
		return nil, err
	}
	switch {
	case res.RootMissing:
		return nil, errGuestCopyGone(s.State)
	case res.TooManyEntries:
		return nil, &CheckpointRefusedError{fmt.Sprintf("the staged copy has more than %d entries, more than a checkpoint holds: exclude generated directories (.limactl-mcp-ignore) or remove them", CheckpointLimits.MaxEntries)}
	case res.StoreFull:
		return nil, &CheckpointRefusedError{fmt.Sprintf("the checkpoint store is full (%s used of %s, after pruning the automatic checkpoints): the new content does not fit; the existing checkpoints can still be restored, and `limactl mcp discard` removes them with the session", sizeString(res.StoreBytes), sizeString(CheckpointLimits.MaxStoreBytes))}
	case res.Checkpoint == nil:
		return nil, errors.New("the guest runner took no checkpoint and said not why")
	}
	return res, nil
}

// Checkpoints lists the session's checkpoints, oldest first.
func (s *Session) Checkpoints(ctx context.Context) (*runnerproto.CkptListResult, error) {
	return s.conn.CkptList(ctx, s.State.ID)
}

// RestoreCheckpoint makes the guest copy exactly what checkpoint id holds (dryRun: lists what
// it would change). The host is not touched.
func (s *Session) RestoreCheckpoint(ctx context.Context, id string, dryRun bool) (*runnerproto.CkptRestoreResult, error) {
	res, err := s.conn.CkptRestore(ctx, runnerproto.CkptRestoreRequest{Tree: s.checkpointTree(), ID: id, DryRun: dryRun, MaxChanges: maxRestoreChanges})
	if err != nil {
		return nil, err
	}
	if res.RootMissing {
		return nil, errGuestCopyGone(s.State)
	}
	if res.Unknown {
		return nil, s.unknownCheckpoint(ctx, id)
	}
	return res, nil
}

// CheckpointManifest is what checkpoint id holds, and where its contents are in the guest
// (ObjectDir/HASH).
func (s *Session) CheckpointManifest(ctx context.Context, id string) (*runnerproto.CkptManifestResult, error) {
	res, err := s.conn.CkptManifest(ctx, runnerproto.CkptManifestRequest{Session: s.State.ID, ID: id, MaxEntries: CheckpointLimits.MaxEntries})
	if err != nil {
		return nil, err
	}
	if res.Unknown {
		return nil, s.unknownCheckpoint(ctx, id)
	}
	return res, nil
}

// unknownCheckpoint says id is not a checkpoint, and which ones there are.
func (s *Session) unknownCheckpoint(ctx context.Context, id string) error {
	l, err := s.Checkpoints(ctx)
	if err != nil || len(l.Checkpoints) == 0 {
		return fmt.Errorf("%w %q: this session has none", ErrUnknownCheckpoint, id)
	}
	ids := make([]string, 0, len(l.Checkpoints))
	for _, c := range l.Checkpoints {
		ids = append(ids, c.ID)
	}
	return fmt.Errorf("%w %q: this session has %s", ErrUnknownCheckpoint, id, strings.Join(ids, ", "))
}

// AutoCheckpointWait bounds the automatic checkpoint: it holds the session's lock (a review
// apply, a sync, a restore), and a runner that says nothing must not hold it for the runner
// call's own deadline (10 minutes, sized for the largest trees). A runner that answers nothing
// at all is found out sooner, by guest.Conn.Within's liveness checks (under a minute). The
// bound must leave room for a first checkpoint, which copies every file into the store: for a
// 10,000-file / 100 MiB tree on a fully emulated guest, 10 s on a quiet host and 113 s on a
// loaded 2-core one (docs/benchmarks.md).
var AutoCheckpointWait = 5 * time.Minute

// AutoCheckpoint takes the automatic checkpoint before an operation that changes the guest copy
// from outside (a review apply, a sync, a restore), and says in words what happened: its id,
// or why there is none (which does not stop a review apply or a sync: the checkpoint is a
// convenience, the operation what the person asked for). It waits at most AutoCheckpointWait.
func (s *Session) AutoCheckpoint(ctx context.Context, before string) (id string, err error) {
	res, err := s.autoCheckpoint(ctx, "before "+before)
	if err != nil {
		return "", err
	}
	return res.Checkpoint.ID, nil
}

func (s *Session) autoCheckpoint(ctx context.Context, label string) (*runnerproto.CkptCreateResult, error) {
	var res *runnerproto.CkptCreateResult
	err := s.conn.Within(ctx, AutoCheckpointWait, "the automatic checkpoint", func(ctx context.Context) error {
		var err error
		res, err = s.Checkpoint(ctx, label, true)
		return err
	})
	var werr *guest.WaitError
	if errors.As(err, &werr) {
		return nil, fmt.Errorf("%w; try again once the guest answers (`limactl mcp status %s` shows whether it does)", err, s.State.Instance)
	}
	return res, err
}

// Within runs f, which uses the session's connection, bounded by d (guest.Conn.Within).
func (s *Session) Within(ctx context.Context, d time.Duration, what string, f func(ctx context.Context) error) error {
	return s.conn.Within(ctx, d, what, f)
}

// RestoreCheckpointFirst takes the automatic checkpoint a restore takes first (the copy as it
// is, so that the restore can be undone), within AutoCheckpointWait.
func (s *Session) RestoreCheckpointFirst(ctx context.Context, id string) (*runnerproto.CkptCreateResult, error) {
	return s.autoCheckpoint(ctx, "before restoring "+id)
}

// sizeString is a byte count for people.
func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
