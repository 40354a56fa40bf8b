package tui

import "github.com/limactl-mcp/limactl-mcp/internal/review"

// historyLines are the lines saying which recorded calls produced it (the session's timeline:
// "written by write_file at 10:02:11; then modified by `npm install` (exit 0, 41 s) at
// 10:05:40"), shown first in what there is to see of an item; none without a timeline. The
// agent's text in it (commands) is escaped by textLines.
func (p *painter) historyLines(it *review.Item, width int) []string {
	h := it.History()
	if h == "" {
		return nil
	}
	return p.textLines("history: "+h, width)
}
