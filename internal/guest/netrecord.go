package guest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// NetRecord asks root's runner for the network record of the agent user (`net report`): the
// record and the raw log are root's alone (0600, so that no agent reads them, its own or
// another's), so the Lima user reads them with sudo, as it sets the agent up. entries is how
// many of the raw log's last entries come with it. The answer is guest output: the caller
// checks it (netpolicy.ParseRecord).
func (c *Conn) NetRecord(ctx context.Context, user string, entries int) ([]byte, error) {
	return c.netReport(ctx, user, entries, "")
}

// NetRecords is NetRecord (without raw entries) for several agent users at once, with one sudo
// (`net report --users`): lines[i] is users[i]'s line, nil when the answer has none for it (it
// was cut at the output's cap: read that one with NetRecord). The lines are guest output: the
// caller checks each (netpolicy.ParseRecordLine).
func (c *Conn) NetRecords(ctx context.Context, users []string) (lines [][]byte, err error) {
	if len(users) > netpolicy.MaxReportEach {
		return nil, fmt.Errorf("%d agent users: more than %d in one report", len(users), netpolicy.MaxReportEach)
	}
	for _, u := range users {
		if !agentUserPattern.MatchString(u) {
			return nil, fmt.Errorf("agent user %q: not a name limactl-mcp makes", u)
		}
	}
	out, err := c.rootNet(ctx, "report --users "+strings.Join(users, ","))
	if err != nil {
		return nil, fmt.Errorf("reading the network records of %d agent users in the guest: %w", len(users), err)
	}
	return reportLines(out, len(users)), nil
}

// reportLines are the first n lines of out, each ended by a newline: a line cut at the output's
// cap, or missing, is nil.
func reportLines(out string, n int) [][]byte {
	lines := make([][]byte, n)
	for i := range lines {
		line, rest, found := strings.Cut(out, "\n")
		if !found {
			break
		}
		lines[i], out = []byte(line), rest
	}
	return lines
}

// NetWatch is NetRecord for a person watching the agent (`watch`, the review's w): it also
// tells the guest's proxy that someone watches, so that it holds the connections the policy
// refuses while they decide (`net report --watch`), for as long as these reads go on. watcher
// names the watch (netpolicy.NewHeldID), whose marker NetUnwatch takes away when it stops.
func (c *Conn) NetWatch(ctx context.Context, user string, entries int, watcher string) ([]byte, error) {
	if !netpolicy.CheckHeldID(watcher) {
		return nil, fmt.Errorf("watcher %q: not an id limactl-mcp makes", watcher)
	}
	return c.netReport(ctx, user, entries, watcher)
}

// NetUnwatch says that the watch watcher of user has stopped (`net unwatch`): without another
// watch, the guest's proxy refuses the agent's connections at once again, those it holds now
// too, instead of up to netpolicy.WatchedFresh later.
func (c *Conn) NetUnwatch(ctx context.Context, user, watcher string) error {
	if !agentUserPattern.MatchString(user) {
		return fmt.Errorf("agent user %q: not a name limactl-mcp makes", user)
	}
	if !netpolicy.CheckHeldID(watcher) {
		return fmt.Errorf("watcher %q: not an id limactl-mcp makes", watcher)
	}
	if _, err := c.rootNet(ctx, "unwatch --user "+user+" --watcher "+watcher); err != nil {
		return fmt.Errorf("ending the watch of %s in the guest: %w", user, err)
	}
	return nil
}

// netReport reads user's record; watcher, when not "", marks the watch of that id.
func (c *Conn) netReport(ctx context.Context, user string, entries int, watcher string) ([]byte, error) {
	if !agentUserPattern.MatchString(user) {
		return nil, fmt.Errorf("agent user %q: not a name limactl-mcp makes", user)
	}
	args := "report --user " + user + " --entries " + strconv.Itoa(entries)
	if watcher != "" {
		args += " --watch --watcher " + watcher
	}
	out, err := c.rootNet(ctx, args)
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
	if _, err := c.rootNet(ctx, "decide --user "+user+" --id "+id+" --decision "+decision); err != nil {
		return fmt.Errorf("deciding on the held connection of %s in the guest: %w", user, err)
	}
	return nil
}

// rootNet runs the root-owned runner's `net` with args (words checked by the caller: no quoting
// is added) through `sudo -n`, as the Lima user, and returns its output.
func (c *Conn) rootNet(ctx context.Context, args string) (string, error) {
	l, err := c.get(ctx)
	if err != nil {
		return "", err
	}
	if l.systemRunner == "" {
		return "", ErrPolicyNeedsSudo
	}
	return c.output(ctx, l, "sudo -n "+shellquote.Quote(l.systemRunner)+" net "+args)
}
