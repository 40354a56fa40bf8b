package staging

import (
	"context"
	"path"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// SinceCheckpoint is what changed in the guest copy since a checkpoint: the changes of the copy
// now against what the checkpoint holds (the host plays no part), and where the checkpoint's
// contents are, for diffs.
type SinceCheckpoint struct {
	Checkpoint runnerproto.CkptInfo
	Changes    *ChangeSet
	objectDir  string
}

// ChangesSince compares the guest copy with checkpoint id. Read-only: nothing is written
// anywhere.
func (s *Session) ChangesSince(ctx context.Context, id string) (*SinceCheckpoint, error) {
	m, err := s.CheckpointManifest(ctx, id)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	scan, err := s.conn.Scan(ctx, s.scanRequest())
	if err != nil {
		return nil, err
	}
	if scan.RootMissing {
		return nil, errGuestCopyGone(s.State)
	}
	now := make([]tree.Entry, 0, len(scan.Entries))
	for _, se := range scan.Entries {
		if !IsGitMetadata(string(se.Path)) { // a checkpoint leaves every .git alone
			now = append(now, entryFromScan(se))
		}
	}
	changes, hashed, err := compare(checkpointBase(m), now, func(paths []tree.Name) ([]string, error) {
		return s.conn.Hash(ctx, s.State.GuestPath, paths)
	}, false, m.Checkpoint.TimeMillis/1000)
	if err != nil {
		return nil, err
	}
	return &SinceCheckpoint{
		Checkpoint: *m.Checkpoint,
		Changes:    &ChangeSet{Changes: changes, Scanned: len(scan.Entries), Hashed: hashed, Duration: time.Since(start)},
		objectDir:  m.ObjectDir,
	}, nil
}

// checkpointBase is a checkpoint's manifest as change detection compares with it: mtimes of
// files only (a file whose mtime is the recorded one and whose size is too is unchanged, as
// against the staging baseline).
func checkpointBase(m *runnerproto.CkptManifestResult) *Manifest {
	out := &Manifest{Entries: make([]tree.Entry, 0, len(m.Entries))}
	for _, e := range m.Entries {
		if e.Type != tree.File {
			e.MTime = 0
		}
		out.Entries = append(out.Entries, e)
	}
	out.Sort()
	return out
}

// DiffSince renders one change since the checkpoint as a unified diff (checkpoint → guest):
// the old side is read from the checkpoint's store in the guest, and shown only when its
// content has the hash the checkpoint names (the store is the agent's to write).
func (s *Session) DiffSince(ctx context.Context, since *SinceCheckpoint, c Change) (string, error) {
	return s.diffWith(ctx, c, func(base *tree.Entry, limit int64) ([]byte, bool, error) {
		data, err := s.conn.ReadFile(ctx, path.Join(since.objectDir, base.Hash), limit)
		if err != nil {
			if guest.IsConnectionError(err) || ctx.Err() != nil {
				return nil, false, err
			}
			return nil, false, nil // missing, too large, not a file: shown as unknown
		}
		if tree.Hash(data) != base.Hash {
			return nil, false, nil
		}
		return data, true, nil
	}, "(the checkpoint's copy of this file is missing or damaged in the guest: only the guest's side is shown)\n")
}
