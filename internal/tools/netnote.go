package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// networkNote says, for a command that failed under a network policy, which connections the
// policy refused while it ran, and what the agent can do about it; "" when none were.
func (ts *Toolset) networkNote(ctx context.Context, since time.Time) string {
	a := ts.g.Agent()
	if a == nil {
		return ""
	}
	blocked := ts.g.BlockedSince(ctx, since)
	if len(blocked) == 0 {
		return ""
	}
	seen := map[string]bool{}
	var targets []string
	for _, e := range blocked {
		t := fmt.Sprintf("%s:%d (%s)", e.Host, e.Port, e.Via)
		if !seen[t] && len(targets) < 5 {
			seen[t] = true
			targets = append(targets, t)
		}
	}
	what := "only the allowed hosts are reachable, through the proxy in HTTPS_PROXY/HTTP_PROXY; DNS and direct connections are refused"
	policy := a.CurrentPolicy() // a person may have changed it live since the server started
	if policy == "none" {
		what = "no host outside the VM is reachable (its own loopback is)"
	}
	return fmt.Sprintf("network policy %s: %s refused while the command ran: %s. Under this policy %s; if the task needs another host, ask the person to allow it (limactl mcp network INSTANCE allow HOST:PORT from the project's directory on the host, or `a` in limactl mcp watch INSTANCE, which lists what was refused: either applies at once, no restart) and run the command again",
		policy, words.Count(len(blocked), "connection was", "connections were"), strings.Join(targets, ", "), what)
}
