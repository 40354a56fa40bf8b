package tui

import (
	"context"

	"github.com/limactl-mcp/limactl-mcp/internal/netwatch"
)

// noWatch is what "w" says of a review given nothing to watch.
const noWatch = "This session has no network policy to watch: nothing it does on the network is refused."

// watchBlocked is the file list's "w": the session's refused destinations, live, as
// `limactl mcp watch` shows them (netwatch's screen, its keys a, s, d), until q or esc come
// back to the list; ctrl+c aborts the review. Without a watch it says why there is none.
func (r *reviewer) watchBlocked() error {
	if r.opts.Watch == nil {
		why := r.opts.NoWatch
		if why == "" {
			why = noWatch
		}
		return r.page(doc{title: "Blocked attempts", render: func(width int) ([]string, int) {
			return r.paint.textLines(why, width), 0
		}})
	}
	if r.watch == nil {
		r.watch = netwatch.New(*r.opts.Watch)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := netwatch.NewScreen(ctx, r.watch, "back")
	if err := r.runProgram(m); err != nil {
		return err
	}
	if m.Interrupted {
		return ErrAborted
	}
	return nil
}
