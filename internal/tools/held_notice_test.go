package tools

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// The agent is told once per held connection, as soon as a look finds it, and the result
// names every one held while the command ran. The real proxy holding a real connection, told
// to a real MCP client, is test/e2e's TestNetworkPolicy ("allow once while watched").
func TestHeldNoticeTellsEachHeldConnectionOnce(t *testing.T) {
	first, every := heldFirstLook, heldLookEvery
	heldFirstLook, heldLookEvery = 10*time.Millisecond, 10*time.Millisecond
	t.Cleanup(func() { heldFirstLook, heldLookEvery = first, every })

	now := time.Now()
	a := netpolicy.HeldConn{ID: "00000000000000aa", Host: "a.example", Port: 443, Since: now, SecondsLeft: 59}
	b := netpolicy.HeldConn{ID: "00000000000000bb", Host: "b.example", Port: 80, Since: now.Add(time.Second), SecondsLeft: 12}
	var mu sync.Mutex
	looks := 0
	var told []string
	look := func(context.Context) []netpolicy.HeldConn {
		mu.Lock()
		defer mu.Unlock()
		looks++
		switch {
		case looks < 3:
			return nil
		case looks < 6:
			return []netpolicy.HeldConn{a} // held over several looks: told once
		default:
			return []netpolicy.HeldConn{b}
		}
	}
	tell := func(_ context.Context, msg string) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, msg)
	}
	n := startHeldNotice(context.Background(), look, tell)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		l := looks
		mu.Unlock()
		if l >= 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d looks in 30 s", l)
		}
	}
	summary := n.end()
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 2 || !strings.Contains(told[0], "a.example:443") || !strings.Contains(told[0], "59 s") || !strings.Contains(told[1], "b.example:80") {
		t.Fatalf("told %q, want a.example:443 then b.example:80, once each", told)
	}
	if !strings.Contains(summary, "held 2 connections (a.example:443, b.example:80)") {
		t.Fatalf("summary %q", summary)
	}
	stopped := looks
	time.Sleep(50 * time.Millisecond)
	if looks != stopped {
		t.Fatalf("still looking after end: %d looks, then %d", stopped, looks)
	}
}

// A command that ends before the first look never reads the record, and says nothing.
func TestHeldNoticeShortCommandNeverLooks(t *testing.T) {
	first := heldFirstLook
	heldFirstLook = time.Hour
	t.Cleanup(func() { heldFirstLook = first })
	looked := false
	n := startHeldNotice(context.Background(), func(context.Context) []netpolicy.HeldConn {
		looked = true
		return nil
	}, func(context.Context, string) {})
	if s := n.end(); s != "" || looked {
		t.Fatalf("summary %q, looked %v", s, looked)
	}
}

// A request the session's relay holds is told as the request it is (its method and path), and
// the summary names it so.
func TestHeldNoticeNamesAHeldRequest(t *testing.T) {
	h := netpolicy.HeldConn{ID: "relay-00000000000000aa", Host: "github.com", Port: 443, Since: time.Now(), SecondsLeft: 58, Request: "POST /o/r.git/git-receive-pack"}
	if msg := heldMessage(h); !strings.Contains(msg, "the network rules hold this command's HTTPS request POST /o/r.git/git-receive-pack to github.com:443") || !strings.Contains(msg, "58 s") {
		t.Errorf("told %q", msg)
	}
	g := netpolicy.HeldConn{ID: "00000000000000bb", Host: "b.example", Port: 80, Since: time.Now().Add(-time.Second)}
	sum := heldSummary(map[string]netpolicy.HeldConn{h.ID: h, g.ID: g})
	if !strings.Contains(sum, "held 2 connections and requests (b.example:80, the request POST /o/r.git/git-receive-pack to github.com:443)") {
		t.Errorf("summary %q", sum)
	}
}
