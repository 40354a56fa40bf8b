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
