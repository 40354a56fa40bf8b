package staging

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// SyncReport says what a sync did.
type SyncReport struct {
	Pushed    []runnerproto.Name `json:"pushed"`    // host additions and edits copied to the guest
	Removed   []runnerproto.Name `json:"removed"`   // host deletions applied to the guest
	Conflicts []runnerproto.Name `json:"conflicts"` // changed on both sides: the guest's version kept
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
	guestChanged := map[runnerproto.Name]bool{}
	for _, c := range guestCS.Changes {
		guestChanged[c.Path] = true
	}
	rep := &SyncReport{Pushed: []runnerproto.Name{}, Removed: []runnerproto.Name{}, Conflicts: []runnerproto.Name{}}
	var toPush []Entry
	var toRemove []runnerproto.Name
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
	if len(toRemove) > 0 {
		var list bytes.Buffer
		for _, p := range toRemove {
			list.WriteString(string(p))
			list.WriteByte(0)
		}
		script := "cd " + shellquote.Quote(s.State.GuestPath) + " && xargs -0 rm -rf --"
		if _, err := s.conn.Stream(ctx, script, &list); err != nil {
			return nil, fmt.Errorf("removing host deletions from the guest copy: %w", err)
		}
	}
	sent := []Entry{}
	if len(toPush) > 0 {
		sent, err = push(ctx, s.conn, s.State.Workdir, s.State.GuestPath, toPush, nil)
		if err != nil {
			return nil, err
		}
	}
	// The new baseline: what both sides now agree on.
	set := map[runnerproto.Name]*Entry{}
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

func parentOf(p runnerproto.Name) runnerproto.Name {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return ""
}
