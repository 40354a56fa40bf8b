package staging

import (
	"context"
	"fmt"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// SyncReport says what a sync did.
type SyncReport struct {
	Pushed    []tree.Name `json:"pushed"`    // host additions and edits copied to the guest
	Removed   []tree.Name `json:"removed"`   // host deletions applied to the guest
	Conflicts []tree.Name `json:"conflicts"` // changed on both sides: the guest's version kept
	// Checkpoint is the automatic checkpoint taken before the guest copy was changed, or
	// CheckpointError why there is none (the sync went ahead).
	Checkpoint      string `json:"checkpoint,omitempty"`
	CheckpointError string `json:"checkpoint_error,omitempty"`
}

// HostUnchanged says whether the host has no edit since the baseline of the stored session id,
// read on the host alone under the session's lock: a sync would copy nothing, and need not
// reach the guest (under a network policy, set its agent up) to say so.
func (s Store) HostUnchanged(ctx context.Context, id string) (bool, error) {
	unlock, err := s.Lock(id, time.Minute)
	if err != nil {
		return false, err
	}
	defer unlock()
	st, base, err := s.LoadID(id)
	if err != nil {
		return false, err
	}
	cs, err := HostChanges(ctx, st, base)
	if err != nil {
		return false, err
	}
	return len(cs.Changes) == 0, nil
}

// Sync brings host edits made since the baseline into the guest copy. A path the agent also
// changed is a conflict: the guest's version is kept and the path stays pending for review.
func (s *Session) Sync(ctx context.Context) (*SyncReport, error) {
	unlock, err := s.store.Lock(s.State.ID, time.Minute)
	if err != nil {
		return nil, err
	}
	defer unlock()
	hostCS, err := HostChanges(ctx, s.State, s.Baseline)
	if err != nil {
		return nil, err
	}
	guestCS, err := s.GuestChanges(ctx)
	if err != nil {
		return nil, err
	}
	guestChanged := map[tree.Name]bool{}
	for _, c := range guestCS.Changes {
		guestChanged[c.Path] = true
	}
	rep := &SyncReport{Pushed: []tree.Name{}, Removed: []tree.Name{}, Conflicts: []tree.Name{}}
	var toPush []tree.Entry
	var toRemove []tree.Name
	for _, c := range hostCS.Changes {
		if guestChanged[c.Path] || guestChanged[parentOf(c.Path)] {
			rep.Conflicts = append(rep.Conflicts, c.Path)
			continue
		}
		if c.Now == nil {
			toRemove = append(toRemove, c.Path)
		} else {
			if c.Kind == TypeChanged {
				toRemove = append(toRemove, c.Path) // tar does not replace a directory with a file
			}
			toPush = append(toPush, *c.Now)
		}
	}
	if len(toRemove) > 0 || len(toPush) > 0 {
		if id, err := s.AutoCheckpoint(ctx, "sync"); err != nil {
			rep.CheckpointError = err.Error()
		} else {
			rep.Checkpoint = id
		}
	}
	if err := s.removeGuestPaths(ctx, toRemove); err != nil {
		return nil, fmt.Errorf("removing host deletions from the guest copy: %w", err)
	}
	sent := []tree.Entry{}
	if len(toPush) > 0 {
		sent, err = push(ctx, s.conn, s.State.Workdir, s.State.GuestPath, toPush, nil)
		if err != nil {
			return nil, err
		}
	}
	// The new baseline: what both sides now agree on.
	set := map[tree.Name]*tree.Entry{}
	for _, p := range toRemove {
		set[p] = nil
	}
	for i := range sent {
		set[sent[i].Path] = &sent[i]
		rep.Pushed = append(rep.Pushed, sent[i].Path)
	}
	for _, p := range toRemove {
		if set[p] == nil {
			rep.Removed = append(rep.Removed, p)
		}
	}
	if err := s.SaveBaseline(s.Baseline.Update(set)); err != nil {
		return nil, err
	}
	return rep, nil
}

func parentOf(p tree.Name) tree.Name {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return ""
}
