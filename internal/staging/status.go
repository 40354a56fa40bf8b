package staging

import (
	"context"
	"sort"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
)

// SessionStatus is what `status` shows of a session.
type SessionStatus struct {
	Workdir   string       `json:"workdir"`
	GuestPath string       `json:"guest_path"`
	StagedAt  time.Time    `json:"staged_at"`
	UpdatedAt time.Time    `json:"updated_at"`
	Files     int          `json:"files"`
	Bytes     int64        `json:"bytes"`
	Pending   map[Kind]int `json:"pending,omitempty"`
	// PendingTotal is the number of pending changes (-1 when they could not be counted).
	PendingTotal int    `json:"pending_total"`
	Error        string `json:"error,omitempty"`
}

// Statuses describes every session of the store; conn (nil when the instance is not running)
// is used to count pending changes.
func Statuses(ctx context.Context, conn *guest.Conn, store Store, connErr error) ([]SessionStatus, error) {
	states, err := store.List()
	if err != nil {
		return nil, err
	}
	sort.Slice(states, func(i, j int) bool { return states[i].Workdir < states[j].Workdir })
	out := make([]SessionStatus, 0, len(states))
	for _, st := range states {
		ss := SessionStatus{Workdir: st.Workdir, GuestPath: st.GuestPath, StagedAt: st.StagedAt, UpdatedAt: st.UpdatedAt, PendingTotal: -1}
		_, base, err := store.LoadID(st.ID)
		if err != nil {
			ss.Error = err.Error()
			out = append(out, ss)
			continue
		}
		ss.Files, ss.Bytes = base.Files()
		switch {
		case conn == nil:
			ss.Error = connErr.Error()
		default:
			s := Attach(conn, store, st, base)
			present, err := s.guestCopyPresent(ctx)
			if err == nil && !present {
				err = errGuestCopyGone(st)
			}
			var cs *ChangeSet
			if err == nil {
				cs, err = s.GuestChanges(ctx)
			}
			if err != nil {
				ss.Error = err.Error()
			} else {
				ss.Pending, ss.PendingTotal = cs.Counts(), len(cs.Changes)
			}
		}
		out = append(out, ss)
	}
	return out, nil
}
