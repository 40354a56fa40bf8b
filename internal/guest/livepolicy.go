package guest

import (
	"context"
	"errors"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// SetAgentPolicy changes the network policy of a running session's agent user at once (`limactl
// mcp network INSTANCE allow|deny|set`): as the Lima user, with sudo, root's runner rewrites the
// user's policy file (`net ensure`, as at every connect, without handing a copy over); the
// proxy reads it again at the agent's next connection, so neither the agent nor its server
// restarts. policy is the guest's spelling (presets expanded) and must be a policy, not open:
// a switch to or from open changes the user the agent works as, which only a restart does. The
// connection must be the Lima user's. The answer is guest output, checked (parseSetup).
func (c *Conn) SetAgentPolicy(ctx context.Context, user, policy string) (*AgentSetup, error) {
	a := &Agent{User: user, Policy: policy}
	if err := a.check(); err != nil {
		return nil, err
	}
	if c.opts.Agent != nil {
		return nil, errors.New("changing an agent's network policy takes the Lima user's connection")
	}
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	if l.systemRunner == "" {
		return nil, ErrPolicyNeedsSudo
	}
	q := shellquote.Quote
	script := "set -e\nsudo -n " + q(l.systemRunner) + " net ensure --live --user " + user + " --policy " + q(policy) + orNoSudo + "\n"
	out, err := c.output(ctx, l, "sh -c "+q(script))
	if err != nil {
		if exitStatus(err) == 97 {
			return nil, ErrPolicyNeedsSudo
		}
		return nil, fmt.Errorf("changing the network policy of the agent user %s in the guest: %w", user, err)
	}
	return a.parseSetup(out)
}
