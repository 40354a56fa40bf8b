package statuscmd

import (
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// timelineCounts are the totals of each session's timeline (nil for a session without one,
// or whose timeline cannot be read).
func timelineCounts(store staging.Store, sts []staging.SessionStatus) []*timeline.Counts {
	out := make([]*timeline.Counts, len(sts))
	for i, s := range sts {
		tl, err := timeline.Read(store.SessionDir(staging.SessionIDOf(s.Workdir, s.Session)))
		if err == nil && tl.Counts.Events > 0 {
			out[i] = &tl.Counts
		}
	}
	return out
}

// timelineLine says a session's counts: "41 tool calls (12 shell commands), 3 failed, 2 min
// 5 s in calls; network: 12 attempts allowed, 3 blocked — `limactl mcp log agent` in /w".
func timelineLine(c *timeline.Counts, inst string, s staging.SessionStatus) string {
	return fmt.Sprintf("%s (%s), %d failed, %s in calls%s — `limactl mcp log %s%s` in %s",
		words.Count(c.Calls, "tool call"), words.Count(c.Commands, "shell command"), c.Failures, timeline.Duration(c.BusyMS), networkCounts(c, s), inst, staging.SessionFlag(s.Session), s.Workdir)
}

// networkCounts says the network attempts the timeline recorded ("; network: 12 attempts
// allowed, 3 blocked"): under a policy, and whenever it recorded some (a session whose
// policy is open now may have had one); nothing for an open session that recorded none,
// whose network is not recorded at all. These are the timeline's counts, what `log` shows:
// the record's own, read from the guest, are on the network line.
func networkCounts(c *timeline.Counts, s staging.SessionStatus) string {
	policy := s.Network != nil && s.Network.Policy != staging.OpenNetwork
	if !policy && c.NetAllowed == 0 && c.NetBlocked == 0 {
		return ""
	}
	return fmt.Sprintf("; network: %s allowed, %d blocked", words.Count(c.NetAllowed, "attempt"), c.NetBlocked)
}
