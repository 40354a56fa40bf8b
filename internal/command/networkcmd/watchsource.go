package networkcmd

import (
	"context"
	"fmt"
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
// requests the session's relay refused under the rules (RefusedRequests), a refused
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
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			continue
		}
		out = append(out, netwatch.Request{Time: u.Time, Host: host, Port: n, Method: u.Method, Path: u.Path, Reason: "refused by the network rules"})
	}
	return out, nil
}
