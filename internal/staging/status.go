package staging

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// SessionStatus is what `status` shows of a session. It is not the JSON of `status --json`:
// that is internal/command/statuscmd's (json.go), its one home, which docs/status-json.md
// describes.
type SessionStatus struct {
	// ID is the session's id; Fork what it was forked from (nil: staged from the host).
	ID      string
	Fork    *ForkOrigin
	Workdir string
	// Session is the session's name ("" for the unnamed one).
	Session   string
	GuestPath string
	StagedAt  time.Time
	UpdatedAt time.Time
	Files     int
	Bytes     int64
	Pending   map[Kind]int
	// PendingTotal is the number of pending changes (-1 when they could not be counted).
	PendingTotal int
	Error        string
	// Network is the session's network policy and what its agent did on the network.
	Network *NetworkReport
	// Checkpoints are the guest copy's checkpoints, oldest first, and CheckpointBytes what
	// they take in the guest; CheckpointsError says why they could not be listed.
	Checkpoints      []runnerproto.CkptInfo
	CheckpointBytes  int64
	CheckpointsError string
	// Took is how long the session took to read (from the guest, when it runs).
	Took time.Duration
}

// Statuses describes the sessions of the store that keep accepts (nil: every one); connFor's
// connections (nil when the instance is not running; its done is called once the session is
// read) count pending changes, and lima, the Lima user's connection, reads the network records
// (root's: readable even when an agent broke its own session's setup). The sessions not kept
// are not read from the guest.
func Statuses(ctx context.Context, lima *guest.Conn, connFor func(*State) (c *guest.Conn, done func()), store Store, connErr error, keep func(*State) bool) ([]SessionStatus, error) {
	states, err := store.List()
	if err != nil {
		return nil, err
	}
	if keep != nil {
		states = slices.DeleteFunc(states, func(st *State) bool { return !keep(st) })
	}
	// By working directory, and each directory's sessions together, the unnamed one first.
	sort.Slice(states, func(i, j int) bool {
		if states[i].Workdir != states[j].Workdir {
			return states[i].Workdir < states[j].Workdir
		}
		return states[i].Session < states[j].Session
	})
	out := make([]SessionStatus, len(states))
	var shared *statusReads
	if lima != nil {
		shared = newStatusReads(ctx, lima, states)
	}
	// Each session is a scan of its copy in the guest (a round trip or more each): several at
	// once, so that an instance with dozens of sessions answers in about the time of a few.
	sem := make(chan struct{}, statusParallel)
	agents := make(chan struct{}, agentsParallel)
	var wg sync.WaitGroup
	for i, st := range states {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if AgentOf(st) != nil {
				agents <- struct{}{}
				defer func() { <-agents }()
			}
			t0 := time.Now()
			conn, done := connFor(st)
			defer done()
			out[i] = sessionStatus(ctx, lima, shared, conn, store, st, connErr)
			out[i].Took = time.Since(t0)
		}()
	}
	wg.Wait()
	return out, nil
}

// statusParallel bounds the sessions Statuses reads at once, and agentsParallel those under a
// network policy among them: each is a connection of its own as its agent user, holding one
// session of the instance's ControlMaster while it is read, its runner (sshd allows 10 per
// connection; the Lima user's connection holds four at most: its SFTP, its runner, the records'
// sudo and the socket tables, statusReads). More at once gain nothing on a guest of 2 vCPUs:
// each starts a sudo and a runner.
const (
	statusParallel = 8
	agentsParallel = 4
)

// sessionStatus reads st's status; shared, when set, reads the network records and the socket
// tables (else lima and conn do, for this session alone).
func sessionStatus(ctx context.Context, lima *guest.Conn, shared *statusReads, conn *guest.Conn, store Store, st *State, connErr error) SessionStatus {
	ss := SessionStatus{ID: st.ID, Fork: st.Fork, Workdir: st.Workdir, Session: st.Session, GuestPath: st.GuestPath, StagedAt: st.StagedAt, UpdatedAt: st.UpdatedAt, PendingTotal: -1,
		Network: &NetworkReport{Policy: NetworkOf(st)}}
	_, base, err := store.LoadID(st.ID)
	if err != nil {
		ss.Error = err.Error()
		return ss
	}
	ss.Files, ss.Bytes = base.Files()
	if conn == nil {
		ss.Error = connErr.Error()
		return ss
	}
	s := Attach(conn, store, st, base)
	// The record is root's: read beside the copy's scan, and shown even when the session's
	// own connection fails.
	var network func(*Session) *NetworkReport
	if policy := NetworkOf(st); shared != nil && policy != OpenNetwork {
		network = s.startNetworkReport(ctx, policy, func() (netpolicy.Record, error) { return shared.record(ctx, AgentUser(st.ID)) }, shared.listeners)
	} else {
		network = s.StartNetworkReport(ctx, lima)
	}
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
	listening := s
	if err != nil {
		listening = nil
	}
	ss.Network = network(listening)
	if err == nil {
		if l, err := s.Checkpoints(ctx); err != nil {
			ss.CheckpointsError = err.Error()
		} else {
			ss.Checkpoints, ss.CheckpointBytes = l.Checkpoints, l.StoreBytes
		}
	}
	return ss
}
