package guest

import (
	"context"
	"fmt"
	"strconv"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// NetRecord asks root's runner for the network record of the agent user (`net report`): the
// record and the raw log are root's alone (0600, so that no agent reads them, its own or
// another's), so the Lima user reads them with sudo, as it sets the agent up. entries is how
// many of the raw log's last entries come with it. The answer is guest output: the caller
// checks it (netpolicy.ParseRecord).
func (c *Conn) NetRecord(ctx context.Context, user string, entries int) ([]byte, error) {
	if !agentUserPattern.MatchString(user) {
		return nil, fmt.Errorf("agent user %q: not a name limactl-mcp makes", user)
	}
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	if l.systemRunner == "" {
		return nil, ErrPolicyNeedsSudo
	}
	out, err := c.output(ctx, l, "sudo -n "+shellquote.Quote(l.systemRunner)+" net report --user "+user+" --entries "+strconv.Itoa(entries))
	if err != nil {
		return nil, fmt.Errorf("reading the network record of %s in the guest: %w", user, err)
	}
	return []byte(out), nil
}
