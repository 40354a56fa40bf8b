package networkcmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/netwatch"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// RecordReader reads `net report`'s answer for the agent user of a session of t.
type RecordReader func(ctx context.Context, t *sessionopen.Target, user string) ([]byte, error)

// ReadRecord is the RecordReader of a running instance: root's runner answers through the
// instance's connection, and, as a person watches, the guest's proxy holds the connections
// the policy refuses while they decide (guest.Conn.NetWatch).
func ReadRecord(ctx context.Context, t *sessionopen.Target, user string) ([]byte, error) {
	if t.Conn == nil {
		return nil, fmt.Errorf("instance %s is not running (%v): the agent makes no connection to watch", t.Instance.Name, t.ConnErr)
	}
	return t.Conn.NetWatch(ctx, user, netpolicy.MaxReportEntries)
}

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
	return netwatch.Source{
		Read: func(ctx context.Context) (*netpolicy.Record, error) {
			data, err := read(ctx, t, user)
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
			return RefusedRequests(t.Store.SessionDir(st.ID))
		},
		HeldRequests: func() ([]netwatch.Request, error) {
			return HeldRequests(t.Store.SessionDir(st.ID))
		},
		DecideRequest: func(id, decision string) error {
			return secrets.DecideHeld(t.Store.SessionDir(st.ID), id, decision)
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
		out = append(out, netwatch.Request{Time: u.Time, Host: host, Port: n, Method: u.Method, Path: u.Path, Reason: "refused by the network rules"})
	}
	return out, nil
}

// HeldRequests are the requests the session's relay holds now (secrets.HeldRequests, from the
// session's host directory dir) as netwatch lists them; and, since a watch calls it at each
// read, it says that a person watches (secrets.MarkWatched): the relay holds a refused request
// only while that is fresh, as the guest's proxy holds a connection while `net report --watch`
// runs.
func HeldRequests(dir string) ([]netwatch.Request, error) {
	if err := secrets.MarkWatched(dir); err != nil {
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
		out = append(out, netwatch.Request{Time: h.Since, Host: host, Port: n, Method: h.Method, Path: h.Path,
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
