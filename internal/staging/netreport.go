package staging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// NetworkReport is a session's network policy and what its agent did on the network: for
// status and review, before the person accepts anything.
type NetworkReport struct {
	Policy string `json:"policy"`
	// User is the guest user the agent works as ("" for open).
	User string `json:"user,omitempty"`
	// Summary is the log's (nil for open, whose network is not recorded, or an unreadable log).
	*netpolicy.Summary
	// Error says why the log could not be read (the counts are then zero).
	Error string `json:"error,omitempty"`
	// Listening are the sockets the agent listens on now, which Lima forwards to the host's
	// loopback (netlisten.go); nil when it listens on none, or they could not be read.
	Listening []ListenPort `json:"listening,omitempty"`
}

// maxNetLog bounds what is read of each log file (the guest rotates it at 1 MiB).
const maxNetLog = 2 << 20

// readNetLog reads an agent's log (the rotated file, then the current one) through conn, as the
// agent's user (the files are root's and readable).
func readNetLog(ctx context.Context, conn *guest.Conn) ([]byte, error) {
	setup, err := conn.Setup(ctx)
	if err != nil || setup == nil || setup.Log == "" {
		return nil, err
	}
	var all []byte
	for _, p := range []string{setup.Log + ".1", setup.Log} {
		data, err := conn.ReadFile(ctx, p, maxNetLog)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the network log %s: %w", p, err)
		}
		all = append(all, data...)
		if len(all) > 0 && all[len(all)-1] != '\n' {
			all = append(all, '\n')
		}
	}
	return all, nil
}

// NetworkReport reads what the session's agent did on the network.
func (s *Session) NetworkReport(ctx context.Context) *NetworkReport {
	r := &NetworkReport{Policy: NetworkOf(s.State)}
	if r.Policy == OpenNetwork {
		return r
	}
	r.User = AgentUser(s.State.ID)
	if setup, err := s.conn.Setup(ctx); err == nil && setup != nil {
		r.Listening, _ = agentListeners(ctx, s.conn, setup.UID)
	}
	data, err := readNetLog(ctx, s.conn)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	sum, _, err := netpolicy.ReadLog(bytes.NewReader(data), 0)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Summary = &sum
	return r
}

// Line says the report in one sentence: "network policy allow:a.com: the agent reached 1 host
// (a.com), 3 attempts blocked (last: b.com:443)".
func (r *NetworkReport) Line() string {
	if r.Policy == OpenNetwork {
		return "network policy open: the agent's commands had the guest's network (not recorded)"
	}
	if r.Summary == nil {
		return "network policy " + r.Policy + ": the log is unreadable (" + r.Error + ")"
	}
	var b strings.Builder
	b.WriteString("network policy " + r.Policy + ": the agent reached " + words.Count(len(r.HostsReached), "host"))
	if n := len(r.HostsReached); n > 0 {
		b.WriteString(" (" + hostNames(r.HostsReached, 5) + ")")
	}
	b.WriteString(", " + words.Count(r.Blocked, "attempt") + " blocked")
	if r.LastBlocked != nil {
		fmt.Fprintf(&b, " (last: %s:%d", r.LastBlocked.Host, r.LastBlocked.Port)
		if len(r.HostsBlocked) > 1 {
			b.WriteString("; hosts: " + hostNames(r.HostsBlocked, 5))
		}
		b.WriteString(")")
	}
	if len(r.Listening) > 0 {
		var ports []string
		for _, p := range r.Listening {
			ports = append(ports, p.String())
		}
		b.WriteString("; listening on " + strings.Join(ports, ", "))
	}
	return b.String()
}

func hostNames(hs []netpolicy.HostSummary, max int) string {
	var names []string
	for i, h := range hs {
		if i == max {
			names = append(names, fmt.Sprintf("and %d more", len(hs)-max))
			break
		}
		names = append(names, h.Host)
	}
	return strings.Join(names, ", ")
}

// BlockedSince lists the connections the agent of conn had refused since about since (the
// guest's clock may differ from the host's by a little: a few seconds before count too), for a
// command's result; nil without a network policy or when the log cannot be read.
func BlockedSince(ctx context.Context, conn *guest.Conn, since time.Time) []netpolicy.Entry {
	data, err := readNetLog(ctx, conn)
	if err != nil || len(data) == 0 {
		return nil
	}
	_, last, err := netpolicy.ReadLog(bytes.NewReader(data), 200)
	if err != nil {
		return nil
	}
	var out []netpolicy.Entry
	for _, e := range last {
		if e.Verdict == netpolicy.VerdictBlocked && !e.Time.Before(since.Add(-5*time.Second)) {
			out = append(out, e)
		}
	}
	return out
}
