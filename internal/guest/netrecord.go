package guest

import (
	"context"
	"fmt"
	"strconv"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// NetRecord asks root's runner for the network record of the agent user (`net report`): the
// record and the raw log are root's alone (0600, so that no agent reads them, its own or
// another's), so the Lima user reads them with sudo, as it sets the agent up. entries is how
// many of the raw log's last entries come with it. The answer is guest output: the caller
// checks it (netpolicy.ParseRecord).
func (c *Conn) NetRecord(ctx context.Context, user string, entries int) ([]byte, error) {
	return c.netReport(ctx, user, entries, false)
}

// NetWatch is NetRecord for a person watching the agent (`watch`, the review's w): it also
// tells the guest's proxy that someone watches, so that it holds the connections the policy
// refuses while they decide (`net report --watch`), for as long as these reads go on.
func (c *Conn) NetWatch(ctx context.Context, user string, entries int) ([]byte, error) {
	return c.netReport(ctx, user, entries, true)
}

func (c *Conn) netReport(ctx context.Context, user string, entries int, watch bool) ([]byte, error) {
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
	cmd := "sudo -n " + shellquote.Quote(l.systemRunner) + " net report --user " + user + " --entries " + strconv.Itoa(entries)
	if watch {
		cmd += " --watch"
	}
	out, err := c.output(ctx, l, cmd)
	if err != nil {
		return nil, fmt.Errorf("reading the network record of %s in the guest: %w", user, err)
	}
	return []byte(out), nil
}

// NetDecide hands the person's decision on a connection the guest's proxy holds (its id, from
// the record's held connections) to root's runner (`net decide`): netpolicy.DecisionOnce lets
// that one connection through, DecisionDeny refuses it now.
func (c *Conn) NetDecide(ctx context.Context, user, id, decision string) error {
	if !agentUserPattern.MatchString(user) {
		return fmt.Errorf("agent user %q: not a name limactl-mcp makes", user)
	}
	if !netpolicy.CheckHeldID(id) || (decision != netpolicy.DecisionOnce && decision != netpolicy.DecisionDeny) {
		return fmt.Errorf("held connection %q, decision %q: not one the guest gave", id, decision)
	}
	l, err := c.get(ctx)
	if err != nil {
		return err
	}
	if l.systemRunner == "" {
		return ErrPolicyNeedsSudo
	}
	if _, err := c.output(ctx, l, "sudo -n "+shellquote.Quote(l.systemRunner)+" net decide --user "+user+" --id "+id+" --decision "+decision); err != nil {
		return fmt.Errorf("deciding on the held connection of %s in the guest: %w", user, err)
	}
	return nil
}
