package servecmd

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// netRecorder copies the agent's network record (the guest's, root's: read with the Lima
// user's sudo) into the session's timeline as network events (timeline.Log.RecordNetwork),
// off the tool calls' path: a call that ran a command pokes it, and it reads the record a
// moment later in a goroutine of its own; while a background process of the server may run it
// also looks every poll; and it looks once more when the server ends.
type netRecorder struct {
	tl   *timeline.Log
	read func(ctx context.Context) (netpolicy.Record, error)
	log  *slog.Logger
	// active says whether to look at each poll without a poke (a background process may run).
	active func() bool
	// settle is how long after a poke it reads (the proxy writes an allowed connection's
	// entry when it closes); poll how often it looks while active.
	settle, poll time.Duration

	poke   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	failed bool // the last read failed: said once, not at every command
}

// netReadTimeout bounds one read of the record; netEndTimeout the last one, at the server's
// end (as backgroundEndTimeout bounds ending the background processes).
const (
	netReadTimeout = 30 * time.Second
	netEndTimeout  = 3 * time.Second
)

// agentNetRecord reads the network record of conn's agent, checked as guest output.
func agentNetRecord(conn *guest.Conn) func(ctx context.Context) (netpolicy.Record, error) {
	return func(ctx context.Context) (netpolicy.Record, error) {
		a := conn.Agent()
		if a == nil {
			return netpolicy.Record{}, errors.New("the session has no agent user: nothing is recorded")
		}
		data, err := conn.NetRecord(ctx, a.User, netpolicy.MaxReportEntries)
		if err != nil {
			return netpolicy.Record{}, err
		}
		return netpolicy.ParseRecord(data, a.User)
	}
}

// newNetRecorder is a recorder of the record read by read into tl; start starts it.
func newNetRecorder(tl *timeline.Log, read func(context.Context) (netpolicy.Record, error), log *slog.Logger, active func() bool) *netRecorder {
	return &netRecorder{tl: tl, read: read, log: log, active: active, settle: 300 * time.Millisecond, poll: 30 * time.Second,
		poke: make(chan struct{}, 1), done: make(chan struct{})}
}

// start starts copying until stop.
func (n *netRecorder) start() *netRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go n.run(ctx)
	return n
}

// Poke asks for a read soon; it never waits (a nil recorder does nothing).
func (n *netRecorder) Poke() {
	if n == nil {
		return
	}
	select {
	case n.poke <- struct{}{}:
	default: // one is pending already
	}
}

func (n *netRecorder) run(ctx context.Context) {
	defer close(n.done)
	t := time.NewTicker(n.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.poke:
			select {
			case <-ctx.Done():
				return
			case <-time.After(n.settle):
			}
		case <-t.C:
			if n.active == nil || !n.active() {
				continue
			}
		}
		n.once(ctx, netReadTimeout)
	}
}

// once reads the record and records what is new.
func (n *netRecorder) once(ctx context.Context, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rec, err := n.read(ctx)
	if err == nil {
		_, err = n.tl.RecordNetwork(rec, time.Now())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil && !n.failed && n.log != nil {
		n.log.Warn("cannot copy the agent's network record into the session's timeline (limactl mcp log)", "error", err)
	}
	n.failed = err != nil
}

// stop ends the goroutine and reads the record a last time (bounded): what the server's
// last commands and its background processes did.
func (n *netRecorder) stop() {
	if n == nil {
		return
	}
	n.cancel()
	<-n.done
	n.once(context.Background(), netEndTimeout)
}
