package tools

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// While a person watches the agent (`limactl mcp watch`), the guest's proxy holds a connection
// the policy refuses until they decide on it (allow once, for the session, deny; 60 s at most),
// and the agent's command just waits. heldNotice tells the agent why while it waits: a
// progress notification when the client asked for progress, and a line in the command's result.
// (Not a log message: MCP's logging is deprecated as of protocol 2026-07-28, SEP-2577.)

var (
	// heldFirstLook: commands shorter than this never read the record (each look is a sudo in
	// the guest); heldLookEvery: how often a longer one looks again.
	heldFirstLook = 2 * time.Second
	heldLookEvery = 3 * time.Second
)

// heldNotice looks for held connections while one command runs.
type heldNotice struct {
	look func(context.Context) []netpolicy.HeldConn
	tell func(context.Context, string)

	mu   sync.Mutex
	seen map[string]netpolicy.HeldConn // by the proxy's id
	stop context.CancelFunc
	done chan struct{}
}

// watchHeld starts looking, for a command of a session under a network policy; stop (always
// safe to call) ends it and says which connections were held, "" when none were.
func (ts *Toolset) watchHeld(ctx context.Context, req *mcp.CallToolRequest) (stop func() string) {
	if ts.g == nil || ts.g.Agent() == nil {
		return func() string { return "" }
	}
	progress := progressOf(ctx) // the call's: after staging's, if the call waited for it
	tell := func(ctx context.Context, msg string) {
		progress.send(ctx, req, 0, 0, msg) // nothing without a progress token: the result says it
	}
	n := startHeldNotice(ctx, ts.g.HeldNow, tell)
	return n.end
}

func startHeldNotice(ctx context.Context, look func(context.Context) []netpolicy.HeldConn, tell func(context.Context, string)) *heldNotice {
	ctx, cancel := context.WithCancel(ctx)
	n := &heldNotice{look: look, tell: tell, seen: map[string]netpolicy.HeldConn{}, stop: cancel, done: make(chan struct{})}
	go n.run(ctx)
	return n
}

func (n *heldNotice) run(ctx context.Context) {
	defer close(n.done)
	t := time.NewTimer(heldFirstLook)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, h := range n.look(ctx) {
			n.mu.Lock()
			_, known := n.seen[h.ID]
			n.seen[h.ID] = h
			n.mu.Unlock()
			if !known && ctx.Err() == nil {
				n.tell(ctx, heldMessage(h))
			}
		}
		t.Reset(heldLookEvery)
	}
}

// end stops looking (a look under way is cancelled) and says what was held.
func (n *heldNotice) end() string {
	n.stop()
	<-n.done
	n.mu.Lock()
	defer n.mu.Unlock()
	return heldSummary(n.seen)
}

// heldMessage is what the agent is told while it waits on h.
func heldMessage(h netpolicy.HeldConn) string {
	if h.Request != "" {
		return fmt.Sprintf("waiting on the person: the network rules hold this command's HTTPS request %s to %s:%d while the person watching the agent decides on it (allow once, allow for the session, or deny; up to %d s more). Nothing to do but wait: the command goes on either way",
			h.Request, h.Host, h.Port, h.SecondsLeft)
	}
	return fmt.Sprintf("waiting on the person: the network policy holds this command's connection to %s:%d while the person watching the agent decides on it (allow once, allow for the session, or deny; up to %d s more). Nothing to do but wait: the command goes on either way",
		h.Host, h.Port, h.SecondsLeft)
}

// heldSummary is the result's line for the connections held while the command ran.
func heldSummary(seen map[string]netpolicy.HeldConn) string {
	if len(seen) == 0 {
		return ""
	}
	hs := make([]netpolicy.HeldConn, 0, len(seen))
	for _, h := range seen {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool {
		return hs[i].Since.Before(hs[j].Since) || hs[i].Since.Equal(hs[j].Since) && hs[i].ID < hs[j].ID
	})
	noun, nouns := "connection", "connections"
	if slices.ContainsFunc(hs, func(h netpolicy.HeldConn) bool { return h.Request != "" }) {
		noun, nouns = "connection or request", "connections and requests"
	}
	var targets []string
	for i, h := range hs {
		if i == 5 {
			targets = append(targets, fmt.Sprintf("and %d more", len(hs)-5))
			break
		}
		if h.Request != "" {
			targets = append(targets, fmt.Sprintf("the request %s to %s:%d", h.Request, h.Host, h.Port))
			continue
		}
		targets = append(targets, fmt.Sprintf("%s:%d", h.Host, h.Port))
	}
	return fmt.Sprintf("while the command ran, the network policy held %s (%s) for the person watching the agent to decide on: what the command printed says whether each went through (allowed) or was refused (denied, or not decided in time)",
		words.Count(len(hs), noun, nouns), strings.Join(targets, ", "))
}
