package tui

import (
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// timelineDoc is the session's whole timeline (the "l" key of the file list): every event in
// the order they began, one line each as `limactl mcp log` prints them, a date line where the
// day changes, and the totals; nil without a timeline. The agent's and the guest's text in it
// (commands, paths, hosts, errors) is escaped by textLines.
func (r *reviewer) timelineDoc() *doc {
	tl := r.opts.Timeline
	if tl == nil || len(tl.Events) == 0 {
		return nil
	}
	events := timeline.ByTime(tl.Events)
	c := tl.Counts
	title := fmt.Sprintf("Timeline of the session: %s", words.Count(c.Events, "event"))
	return &doc{title: title, render: func(width int) ([]string, int) {
		var out []string
		day := ""
		for i := range events {
			e := &events[i]
			local := e.Time.Local()
			if d := local.Format("2006-01-02"); d != day {
				out = append(out, r.paint.textLines("— "+d+" —", width)...)
				day = d
			}
			out = append(out, r.paint.textLines(fmt.Sprintf("%s  %-7s %s", local.Format("15:04:05"), e.Source, timeline.Describe(e)), width)...)
		}
		sum := fmt.Sprintf("%s: %s (%s), %d failed; %s in calls and commands",
			words.Count(c.Events, "event"), words.Count(c.Calls, "tool call"), words.Count(c.Commands, "shell command"), c.Failures, timeline.Duration(c.BusyMS))
		if c.NetAllowed > 0 || c.NetBlocked > 0 {
			sum += fmt.Sprintf("; network: %s allowed, %s blocked", words.Count(c.NetAllowed, "attempt"), words.Count(c.NetBlocked, "attempt"))
		}
		if tl.Dropped.Events > 0 {
			sum += fmt.Sprintf(" (the oldest %d events were rotated out: counted, not shown)", tl.Dropped.Events)
		}
		out = append(out, "")
		out = append(out, r.paint.textLines(sum+".", width)...)
		return out, 0
	}}
}
