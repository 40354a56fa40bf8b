package tools

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressSender sends one call's progress notifications. MCP asks that each carry a progress
// greater than the one before, and one call may report the working directory's staging (bytes
// copied, the same value again while a large file copies) and then a connection held for the
// person (held_notice.go): a value not above the last sent goes out as the last plus one.
type progressSender struct {
	mu   sync.Mutex
	last float64
	sent bool
}

type progressKey struct{}

// withProgress gives ctx a progressSender for the call, unless it has one.
func withProgress(ctx context.Context) context.Context {
	if _, ok := ctx.Value(progressKey{}).(*progressSender); ok {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, &progressSender{})
}

// progressOf is the call's progressSender (withProgress), or a new one.
func progressOf(ctx context.Context) *progressSender {
	if p, ok := ctx.Value(progressKey{}).(*progressSender); ok {
		return p
	}
	return &progressSender{}
}

// send notifies req's client of the call's progress, when the client asked for it (a progress
// token); total is left out when it is not above progress.
func (p *progressSender) send(ctx context.Context, req *mcp.CallToolRequest, progress, total float64, msg string) {
	if req == nil || req.Session == nil || req.Params == nil {
		return
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock() // one at a time, in the order of their values
	if p.sent && progress <= p.last {
		progress = p.last + 1
	}
	p.last, p.sent = progress, true
	if total <= progress {
		total = 0
	}
	_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: msg})
}
