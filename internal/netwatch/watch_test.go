package netwatch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// fakeGuest is a Source whose record the test sets and whose decisions it records.
type fakeGuest struct {
	mu      sync.Mutex
	rec     netpolicy.Record
	decided []string
	fail    error
}

func (g *fakeGuest) source() Source {
	return Source{
		Read: func(context.Context) (*netpolicy.Record, error) {
			g.mu.Lock()
			defer g.mu.Unlock()
			r := g.rec
			return &r, nil
		},
		Decide: func(_ context.Context, id, decision string) error {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.fail != nil {
				return g.fail
			}
			g.decided = append(g.decided, id+" "+decision)
			return nil
		},
		Policy:   func() string { return "allow:a.test" },
		Interval: time.Second,
	}
}

// Held connections come first, are reported as changed once (when first read), and leave the
// list when decided, for good (they are not listed again while the guest still holds them,
// nor after); a decision on a destination refused already, or one the guest refuses, says so.
func TestWatchHeld(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := &fakeGuest{}
	g.rec.Entries = []netpolicy.Entry{{Time: t0, Host: "b.test", Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy}}
	g.rec.Held = []netpolicy.HeldConn{{ID: "0123456789abcdef", Host: "h.test", Port: 443, Since: t0, SecondsLeft: 40}}
	w := New(g.source())
	ctx := context.Background()
	changed, err := w.Read(ctx)
	if err != nil || len(changed) != 2 || !changed[0].Held || changed[0].ID != "0123456789abcdef" || changed[0].SecondsLeft != 40 || changed[1].Held {
		t.Fatalf("first read: %+v %v", changed, err)
	}
	g.rec.Held = append(g.rec.Held, netpolicy.HeldConn{ID: "fedcba9876543210", Host: "i.test", Port: 80, Since: t0, SecondsLeft: 9})
	if changed, _ := w.Read(ctx); len(changed) != 1 || changed[0].ID != "fedcba9876543210" {
		t.Errorf("second read: %+v (only the new held connection)", changed)
	}
	list := w.List()
	if len(list) != 3 || list[0].Entry() != "h.test:443" || list[1].Entry() != "i.test:80" || list[2].Entry() != "b.test:443" {
		t.Fatalf("list: %+v", list)
	}
	if msg, err := w.Decide(ctx, list[0], netpolicy.DecisionOnce); err != nil || !strings.Contains(msg, "allowed h.test:443 once") {
		t.Errorf("once: %q %v", msg, err)
	}
	if _, err := w.Decide(ctx, list[2], netpolicy.DecisionOnce); err == nil || !strings.Contains(err.Error(), "is not held") {
		t.Errorf("once on a refused destination: %v", err)
	}
	g.fail = errors.New("no connection held")
	if _, err := w.Decide(ctx, list[1], netpolicy.DecisionDeny); err == nil || !strings.Contains(err.Error(), "deny i.test:80: no connection held") {
		t.Errorf("a refused decision: %v", err)
	}
	g.fail = nil
	// The guest still lists the decided one at the next read: it stays out of the list.
	w.Read(ctx)
	if list := w.List(); len(list) != 2 || list[0].Entry() != "i.test:80" {
		t.Errorf("after once: %+v", list)
	}
	if _, err := w.Decide(ctx, w.List()[0], netpolicy.DecisionDeny); err != nil {
		t.Error(err)
	}
	g.rec.Held = nil
	w.Read(ctx)
	if list := w.List(); len(list) != 1 || list[0].Held {
		t.Errorf("after the guest dropped them: %+v", list)
	}
	if strings.Join(g.decided, ",") != "0123456789abcdef once,fedcba9876543210 deny" {
		t.Errorf("decisions: %v", g.decided)
	}
	if _, err := New(Source{}).Decide(ctx, list[0], netpolicy.DecisionOnce); err == nil || !strings.Contains(err.Error(), "not available here") {
		t.Errorf("no Decide: %v", err)
	}
}

// Requests the session's relay refused under the rules (read on the host, beside the guest's
// record) are listed with the guest's refusals, newest first, each counted once however often
// the log is read; a allows exactly the refused request (HOST:PORT/PATH:METHOD), never more: a
// method or path of the agent's that a rule would read as several methods
// or a pattern is refused with how to allow it by hand, and nothing is changed.
func TestWatchRelayRequests(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := &fakeGuest{}
	g.rec.Entries = []netpolicy.Entry{{Time: t0.Add(time.Second), Host: "b.test", Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy}}
	var mu sync.Mutex
	var reqs []Request
	var allowed []string
	src := g.source()
	src.Requests = func() ([]Request, error) {
		mu.Lock()
		defer mu.Unlock()
		return append([]Request(nil), reqs...), nil
	}
	src.Allow = func(_ context.Context, entry string, save bool) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		allowed = append(allowed, entry)
		return "allowed " + entry, nil
	}
	req := func(sec int, port int, method, path string) Request {
		return Request{Time: t0.Add(time.Duration(sec) * time.Second), Host: "github.com", Port: port, Method: method, Path: path}
	}
	reqs = []Request{req(0, 443, "POST", "/o/r.git/git-receive-pack"), req(2, 443, "POST", "/o/r.git/git-receive-pack"), req(3, 8443, "PUT", "/x")}
	w := New(src)
	ctx := context.Background()
	changed, err := w.Read(ctx)
	if err != nil || len(changed) != 3 {
		t.Fatalf("first read: %+v %v", changed, err)
	}
	list := w.List()
	if len(list) != 3 || list[0].Entry() != "github.com:8443/x:PUT" || list[1].Entry() != "github.com:443/o/r.git/git-receive-pack:POST" || list[1].Attempts != 2 || list[1].Via != ViaRelay || list[2].Entry() != "b.test:443" {
		t.Fatalf("list: %+v", list)
	}
	if changed, _ := w.Read(ctx); len(changed) != 0 {
		t.Errorf("the same log again changed %+v", changed)
	}
	if msg, err := w.Allow(ctx, list[1], false); err != nil || msg != "allowed github.com:443/o/r.git/git-receive-pack:POST" {
		t.Errorf("allow: %q %v", msg, err)
	}
	if l := w.List(); len(l) != 2 {
		t.Errorf("after allow: %+v", l)
	}
	w.Deny(list[0])
	if l := w.List(); len(l) != 1 || l[0].Host != "b.test" {
		t.Errorf("after deny: %+v", l)
	}
	mu.Lock()
	reqs = append(reqs, req(4, 443, "POST", "/o/r.git/git-receive-pack"), req(4, 8443, "PUT", "/x"))
	mu.Unlock()
	if changed, _ := w.Read(ctx); len(changed) != 1 || changed[0].Attempts != 3 {
		t.Errorf("refused again: %+v (the allowed one comes back, the denied one stays hidden)", changed)
	}

	for _, hostile := range []Destination{
		{Host: "github.com", Port: 443, Method: "PUT+POST", Path: "/x"},
		{Host: "github.com", Port: 443, Method: "ro", Path: "/x"},
		{Host: "github.com", Port: 443, Method: "POST", Path: "/*"},
		{Host: "github.com", Port: 443, Method: "POST", Path: "/o/*/git-receive-pack"},
		{Host: "github.com", Port: 443, Method: "POST", Path: "/a/../b"},
		{Host: "github.com", Port: 443, Method: "POST", Path: "/a,b.test"},
		{Host: "github.com", Port: 443, Method: "POST", Path: "relative"},
		{Host: "github.com", Port: 443, Method: "POST", Path: "/a b"},
	} {
		if msg, err := w.Allow(ctx, hostile, false); err == nil || !strings.Contains(err.Error(), "by hand") {
			t.Errorf("allow %s: %q %v, want a refusal that says how to allow it by hand", hostile.Entry(), msg, err)
		}
	}
	if strings.Join(allowed, " ") != "github.com:443/o/r.git/git-receive-pack:POST" {
		t.Errorf("entries allowed: %q", allowed)
	}
}

// Requests the relay holds are listed with the held connections (oldest first), as the rule
// for exactly each; o and d go to the relay (DecideRequest), never to the guest, even when a
// guest's held connection bears the same id; a adds the exact rule and lets the held request
// through (the relay's connection keeps the rules it was opened with).
func TestWatchHeldRequests(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const id = "relay-0123456789abcdef"
	g := &fakeGuest{}
	g.rec.Held = []netpolicy.HeldConn{{ID: id, Host: "h.test", Port: 443, Since: t0.Add(time.Second), SecondsLeft: 40}}
	src := g.source()
	var mu sync.Mutex
	var relayDecided, allowed []string
	reqs := []Request{
		{Time: t0, Host: "github.com", Port: 443, Method: "POST", Path: "/o/r.git/git-receive-pack", ID: id, Deadline: time.Now().Add(30 * time.Second)},
		{Time: t0.Add(2 * time.Second), Host: "github.com", Port: 443, Method: "PUT", Path: "/x", ID: "relay-1111111111111111", Deadline: time.Now().Add(50 * time.Second)},
	}
	src.HeldRequests = func() ([]Request, error) {
		mu.Lock()
		defer mu.Unlock()
		return append([]Request(nil), reqs...), nil
	}
	src.DecideRequest = func(id, decision string) error {
		mu.Lock()
		defer mu.Unlock()
		relayDecided = append(relayDecided, id+" "+decision)
		return nil
	}
	src.Allow = func(_ context.Context, entry string, save bool) (string, error) {
		allowed = append(allowed, entry)
		return "allowed " + entry, nil
	}
	w := New(src)
	ctx := context.Background()
	changed, err := w.Read(ctx)
	if err != nil || len(changed) != 3 {
		t.Fatalf("first read: %+v %v", changed, err)
	}
	list := w.List()
	if len(list) != 3 || list[0].Via != ViaRelay || list[1].Via != netpolicy.ViaProxy || list[2].Entry() != "github.com:443/x:PUT" {
		t.Fatalf("list: %+v", list)
	}
	if d := list[0]; !d.Held || d.Entry() != "github.com:443/o/r.git/git-receive-pack:POST" || d.SecondsLeft < 25 || d.SecondsLeft > 30 {
		t.Errorf("the held request: %+v", d)
	}
	msg, err := w.Decide(ctx, list[0], netpolicy.DecisionOnce)
	if err != nil || !strings.Contains(msg, "that request goes through") {
		t.Errorf("once: %q %v", msg, err)
	}
	if len(g.decided) != 0 || len(relayDecided) != 1 || relayDecided[0] != id+" once" {
		t.Errorf("decided: guest %q, relay %q", g.decided, relayDecided)
	}
	if list := w.List(); len(list) != 2 || list[0].Via != netpolicy.ViaProxy || list[0].ID != id {
		t.Errorf("after once, the guest's connection of the same id must stay: %+v", list)
	}
	msg, err = w.Allow(ctx, w.List()[1], false)
	if err != nil || !strings.Contains(msg, "the held request goes through") || len(allowed) != 1 || allowed[0] != "github.com:443/x:PUT" {
		t.Errorf("a: %q %v, allowed %q", msg, err, allowed)
	}
	if len(relayDecided) != 2 || relayDecided[1] != "relay-1111111111111111 once" {
		t.Errorf("a on a held request: relay decisions %q", relayDecided)
	}
	if changed, _ := w.Read(ctx); len(changed) != 0 {
		t.Errorf("read again, the same held: %+v", changed)
	}
	if list := w.List(); len(list) != 1 || list[0].Via != netpolicy.ViaProxy {
		t.Errorf("decided requests must stay hidden while the relay still lists them: %+v", list)
	}
}
