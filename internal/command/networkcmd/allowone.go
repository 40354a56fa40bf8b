package networkcmd

import (
	"context"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// Allow allows one destination (HOST:PORT or HOST, as the agent was refused it) for the
// running session st of t through Change (save: and keeps it as the project's policy), and
// says in one line what changed and when it takes effect: the allow of `watch`'s a and s, and
// of the review TUI's w.
func Allow(ctx context.Context, t *sessionopen.Target, st *staging.State, entry string, save bool, flagsHint string) (string, error) {
	prev, policy, applied, err := Change(ctx, t, st, "allow", []string{entry}, save, flagsHint)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("allowed %s: policy %s (was %s)", termsafe.String(entry), policy, prev)
	if applied {
		msg += ", in force now"
	} else {
		msg += ", recorded: put in place when the session next connects"
	}
	if save {
		msg += "; saved as the project's policy"
	}
	return msg, nil
}
