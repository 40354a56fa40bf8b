package staging

import (
	"context"
	"fmt"
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
	// Source is where the counts come from: "totals" (the record root keeps) or "log" (a
	// session from before the record: what the raw log still holds).
	Source string `json:"source,omitempty"`
	// Error says why the record could not be read (the counts are then zero).
	Error string `json:"error,omitempty"`
	// Listening are the sockets the agent listens on now, which Lima forwards to the host's
	// loopback (netlisten.go); nil when it listens on none, or they could not be read.
	Listening []ListenPort `json:"listening,omitempty"`
	// Changes are the last changes of the policy in the guest (a live `limactl mcp network
	// ... allow`, a restart with another --network), oldest first.
	Changes []netpolicy.PolicyChange `json:"changes,omitempty"`
}

// netRecord reads the agent's network record through root's runner (`net report`: the record
// and the log are root's alone), checked as guest output.
func netRecord(ctx context.Context, conn *guest.Conn, user string, entries int) (netpolicy.Record, error) {
	data, err := conn.NetRecord(ctx, user, entries)
	if err != nil {
		return netpolicy.Record{}, err
	}
	return netpolicy.ParseRecord(data, user)
}

// NetworkReport reads what the session's agent did on the network: the record root keeps
// (kept apart from the raw log, which rotates: no volume of noise removes what was reached).
// lima is the Lima user's connection, which reads root's record (`sudo -n runner net report`)
// without setting the agent up: an agent that broke its own session's setup (a link where its
// copy was, say) cannot hide its record by it. Nil: the session's own connection.
func (s *Session) NetworkReport(ctx context.Context, lima *guest.Conn) *NetworkReport {
	return s.StartNetworkReport(ctx, lima)(s)
}

// StartNetworkReport is NetworkReport begun now and finished by the function it returns: the
// record's read (a sudo in the guest, 0.3–0.5 s on an emulated one) goes on beside what the
// caller does meanwhile (review's changeset, status's scan of the copy). The function waits
// for it; of is the session whose connection gives the agent's uid, whose listening sockets
// the report lists: s, or s on another connection (review's reading one); nil: none are
// listed (that connection just failed: it would only fail again).
func (s *Session) StartNetworkReport(ctx context.Context, lima *guest.Conn) (finish func(of *Session) *NetworkReport) {
	policy := NetworkOf(s.State)
	if policy == OpenNetwork {
		return func(*Session) *NetworkReport { return &NetworkReport{Policy: policy} }
	}
	user := AgentUser(s.State.ID)
	if lima == nil {
		lima = s.conn
	}
	// The socket tables are read beside the record, through lima too: the session's own
	// connection may still be setting its agent up.
	tables := listenTables(ctx, lima)
	go func() { _, _ = tables() }()
	return s.startNetworkReport(ctx, policy, func() (netpolicy.Record, error) { return netRecord(ctx, lima, user, 0) },
		func(uid int) ([]ListenPort, error) { return listenersIn(tables, uid) })
}

// startNetworkReport is StartNetworkReport for a session under policy (not open) whose record
// read gives, and the sockets of its agent's uid listeners.
func (s *Session) startNetworkReport(ctx context.Context, policy string, read func() (netpolicy.Record, error), listeners func(uid int) ([]ListenPort, error)) (finish func(of *Session) *NetworkReport) {
	user := AgentUser(s.State.ID)
	type result struct {
		rec netpolicy.Record
		err error
	}
	got := make(chan result, 1) // never blocks: a finish never called leaves no goroutine behind
	go func() {
		rec, err := read()
		got <- result{rec, err}
	}()
	return func(of *Session) *NetworkReport {
		r := &NetworkReport{Policy: policy, User: user}
		if of != nil {
			if setup, err := of.conn.Setup(ctx); err == nil && setup != nil {
				r.Listening, _ = listeners(setup.UID)
			}
		}
		rd := <-got
		if rd.err != nil {
			r.Error = rd.err.Error()
			return r
		}
		r.Summary = &rd.rec.Summary
		r.Source = rd.rec.Source
		r.Changes = rd.rec.Changes
		return r
	}
}

// Line says the report in one sentence: "network policy allow:a.com: the agent reached 1 host
// (a.com), 3 attempts blocked (last: b.com:443)".
func (r *NetworkReport) Line() string {
	if r.Policy == OpenNetwork {
		return "network policy open: the agent's commands had the guest's network (not recorded)"
	}
	if r.Summary == nil {
		return "network policy " + r.Policy + ": the record is unreadable (" + r.Error + ")"
	}
	var b strings.Builder
	reached := len(r.HostsReached)
	if r.OthersReached != nil {
		reached += r.OthersReached.Hosts
	}
	b.WriteString("network policy " + r.Policy + ": the agent reached " + words.Count(reached, "host"))
	if n := len(r.HostsReached); n > 0 {
		b.WriteString(" (" + hostNames(r.HostsReached, 5) + ")")
	}
	if r.BytesUp > 0 || r.BytesDown > 0 {
		b.WriteString(", " + byteCount(r.BytesUp) + " sent, " + byteCount(r.BytesDown) + " received")
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

// byteCount says n bytes as "512 B", "1.5 kB", "52.4 MB" (powers of 1000).
func byteCount(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	f, unit := float64(n), "kMGTPE"
	i := -1
	for f >= 1000 && i < len(unit)-1 {
		f /= 1000
		i++
	}
	return fmt.Sprintf("%.1f %cB", f, unit[i])
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
	a := conn.Agent()
	if a == nil {
		return nil
	}
	rec, err := netRecord(ctx, conn, a.User, 200)
	if err != nil {
		return nil
	}
	var out []netpolicy.Entry
	for _, e := range rec.Entries {
		if e.Verdict == netpolicy.VerdictBlocked && !e.Time.Before(since.Add(-5*time.Second)) {
			out = append(out, e)
		}
	}
	return out
}

// HeldNow lists the connections the guest's proxy holds now for the agent of conn while the
// person watching it decides (`limactl mcp watch`), then the requests the session's relay
// holds on the host (HeldConn.Request set); nil without a network policy or with none held
// (the guest's part is left out when the record cannot be read).
func HeldNow(ctx context.Context, conn *guest.Conn) []netpolicy.HeldConn {
	a := conn.Agent()
	if a == nil {
		return nil
	}
	var held []netpolicy.HeldConn
	if rec, err := netRecord(ctx, conn, a.User, 0); err == nil {
		for _, h := range rec.Held {
			h.Request = "" // the guest's record names connections only
			held = append(held, h)
		}
	}
	if a.Secrets != nil && a.Secrets.Held != nil {
		held = append(held, a.Secrets.Held()...)
	}
	return held
}
