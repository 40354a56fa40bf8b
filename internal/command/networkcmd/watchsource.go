package networkcmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/netwatch"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// RecordReader reads `net report`'s answer for the agent user of a session of t, for the watch
// watcher (netpolicy.NewHeldID).
type RecordReader func(ctx context.Context, t *sessionopen.Target, user, watcher string) ([]byte, error)

// ReadRecord is the RecordReader of a running instance: root's runner answers through the
// instance's connection, and, as a person watches, the guest's proxy holds the connections
// the policy refuses while they decide (guest.Conn.NetWatch).
func ReadRecord(ctx context.Context, t *sessionopen.Target, user, watcher string) ([]byte, error) {
	if t.Conn == nil {
		return nil, fmt.Errorf("instance %s is not running (%v): the agent makes no connection to watch", t.Instance.Name, t.ConnErr)
	}
	return t.Conn.NetWatch(ctx, user, netpolicy.MaxReportEntries, watcher)
}

// endTimeout bounds what a watch that stops does to say so (one sudo through ssh: under a
// second, but a read of the watch once took more than 5 s on a loaded machine with an emulated
// guest); past it the markers go stale as a killed watch's do.
const endTimeout = 15 * time.Second

// HeldDecider hands the person's decision (netpolicy.DecisionOnce, DecisionDeny) on a
// connection the guest's proxy holds for user (id: the record's) to the guest.
type HeldDecider func(ctx context.Context, t *sessionopen.Target, user, id, decision string) error

// DecideHeld is the HeldDecider of a running instance: root's runner (`net decide`) through
// the instance's connection. The o and d keys of `watch` and of the review's w use it.
func DecideHeld(ctx context.Context, t *sessionopen.Target, user, id, decision string) error {
	if t.Conn == nil {
		return fmt.Errorf("instance %s is not running (%v): nothing is held", t.Instance.Name, t.ConnErr)
	}
	return t.Conn.NetDecide(ctx, user, id, decision)
}

// WatchSource is what netwatch needs to watch the session st of t (`watch`, and the review
// TUI's w): its record read by read (nil: ReadRecord) and checked as guest output, the
// requests the session's relay refused under the rules (RefusedRequests) and those it holds
// while the watch reads (HeldRequests, decided by secrets.DecideHeld), a refused
// destination allowed by Allow, a held connection decided by decide (nil: DecideHeld), its
// policy as recorded now, read every interval.
func WatchSource(t *sessionopen.Target, st *staging.State, flagsHint string, read RecordReader, decide HeldDecider, interval time.Duration) netwatch.Source {
	if read == nil {
		read = ReadRecord
	}
	if decide == nil {
		decide = DecideHeld
	}
	which := st.Workdir
	if st.Session != "" {
		which += " [session " + st.Session + "]"
	}
	user := staging.AgentUser(st.ID)
	// The watch's own markers, the guest's and the relay's: taken away when it ends (End).
	watcher := netpolicy.NewHeldID()
	m := &markers{}
	dir := t.Store.SessionDir(st.ID)
	return netwatch.Source{
		Read: func(ctx context.Context) (*netpolicy.Record, error) {
			done, err := m.start()
			if err != nil {
				return nil, err
			}
			defer done()
			data, err := read(ctx, t, user, watcher)
			if err != nil {
				return nil, err
			}
			rec, err := netpolicy.ParseRecord(data, user)
			if err != nil {
				return nil, err
			}
			return &rec, nil
		},
		Requests: func() ([]netwatch.Request, error) {
			return RefusedRequests(dir)
		},
		HeldRequests: func() ([]netwatch.Request, error) {
			done, err := m.start()
			if err != nil {
				return nil, err
			}
			defer done()
			return HeldRequests(dir, watcher)
		},
		DecideRequest: func(id, decision string) error {
			return secrets.DecideHeld(dir, id, decision)
		},
		// A clean stop is felt at once: what is held is refused now, and the agent's next
		// refused connection is refused at once, not held until the markers are stale
		// (netpolicy.WatchedFresh). Another watch keeps its own. Best effort, bounded: a
		// marker left behind goes stale.
		End: func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endTimeout)
			defer cancel()
			if !m.end(ctx) {
				return
			}
			_ = secrets.Unwatch(dir, watcher)
			if t.Conn != nil {
				_ = t.Conn.NetUnwatch(ctx, user, watcher)
			}
		},
		Allow: func(ctx context.Context, entry string, save bool) (string, error) {
			return Allow(ctx, t, st, entry, save, flagsHint)
		},
		Decide: func(ctx context.Context, id, decision string) error {
			return decide(ctx, t, user, id, decision)
		},
		// After the decisions of this watch, or a `network` command run meanwhile.
		Policy: func() string {
			if cur, err := t.Lookup(st.Workdir, st.Session); err == nil && cur != nil {
				return staging.NetworkOf(cur)
			}
			return staging.NetworkOf(st)
		},
		Title:    fmt.Sprintf("%s (instance %s)", which, t.Instance.Name),
		Interval: interval,
	}
}

// RefusedRequests are the requests the session's relay refused under the network rules, from
// the log of uses kept in the session's host directory dir, as netwatch counts them: the
// host and port of each target, its method and path (the agent's: netwatch.Watch.Allow makes
// a rule of one only when it names exactly that request).
func RefusedRequests(dir string) ([]netwatch.Request, error) {
	uses, err := secrets.RefusedRequests(dir)
	if err != nil {
		return nil, err
	}
	out := make([]netwatch.Request, 0, len(uses))
	for _, u := range uses {
		host, n, ok := hostPort(u.Host)
		if !ok {
			continue
		}
		out = append(out, netwatch.Request{Time: u.Time, Host: host, Port: n, Method: u.Method, Path: u.Path, Reason: "refused by the network rules", Command: u.Command})
	}
	return out, nil
}

// markers tracks a watch's reads, each of which marks the watch (the guest's `net report
// --watch`, the relay's secrets.MarkWatched), so that its end takes the markers away after the
// last read, never before one that would make them again: the screen's reads run in
// goroutines of their own, and one may be on its way when the person quits.
type markers struct {
	mu       sync.Mutex
	marked   bool
	ended    bool
	inflight sync.WaitGroup
}

// start begins a read that marks the watch; done ends it. After end, no read starts.
func (m *markers) start() (done func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return nil, errors.New("the watch has ended")
	}
	m.marked = true
	m.inflight.Add(1)
	return m.inflight.Done, nil
}

// end stops further reads and waits (bounded by ctx) for those on their way; it tells whether
// any read marked the watch.
func (m *markers) end(ctx context.Context) bool {
	m.mu.Lock()
	m.ended = true
	marked := m.marked
	m.mu.Unlock()
	idle := make(chan struct{})
	go func() { m.inflight.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-ctx.Done(): // a read stuck past the bound: its marker goes stale
	}
	return marked
}

// HeldRequests are the requests the session's relay holds now (secrets.HeldRequests, from the
// session's host directory dir) as netwatch lists them; and, since a watch calls it at each
// read, it says that the watch watcher runs (secrets.MarkWatched): the relay holds a refused
// request only while that is fresh, as the guest's proxy holds a connection while `net report
// --watch` runs.
func HeldRequests(dir, watcher string) ([]netwatch.Request, error) {
	if err := secrets.MarkWatched(dir, watcher); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // no state directory: no relay either
		}
		return nil, err
	}
	held, err := secrets.HeldRequests(dir)
	if err != nil {
		return nil, err
	}
	out := make([]netwatch.Request, 0, len(held))
	for _, h := range held {
		host, n, ok := hostPort(h.Host)
		if !ok {
			continue
		}
		out = append(out, netwatch.Request{Time: h.Since, Host: host, Port: n, Method: h.Method, Path: h.Path, Command: h.Command,
			Reason: "refused by the network rules, held while you decide", ID: h.ID, Deadline: h.Deadline})
	}
	return out, nil
}

// hostPort splits a relay target, host:port, as netwatch counts it.
func hostPort(target string) (string, int, bool) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(port)
	return host, n, err == nil
}
