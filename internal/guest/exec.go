package guest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// ExecRequest is a command to run in the guest.
type ExecRequest struct {
	Argv    []string
	Dir     string
	Timeout time.Duration // 0: none
	// HeadBytes and TailBytes bound what is kept of each output stream.
	HeadBytes, TailBytes int
}

// Exec runs a command in the guest: through the runner when it is up (one round trip), else
// in its own SSH session through a login shell, as `limactl shell --workdir DIR` does. When
// ctx ends, the command's process group is killed and ctx's error is returned with whatever
// the command printed until then.
func (c *Conn) Exec(ctx context.Context, req ExecRequest) (*runnerproto.ExecResult, error) {
	for attempt := 0; ; attempt++ {
		l, err := c.get(ctx)
		if err != nil {
			return nil, err
		}
		res, err := l.ops.exec(ctx, l, req)
		if err != nil && !errors.Is(err, ctx.Err()) && (IsConnectionError(err) || errors.Is(err, sshlink.ErrNoSession)) {
			c.drop(l, err)
			if attempt == 0 && errors.Is(err, sshlink.ErrNoSession) {
				continue // nothing ran: safe to try once more on a new connection
			}
			return nil, fmt.Errorf("%w; it reconnects on the next call (the command may or may not have run)", err)
		}
		return res, err
	}
}

func (b runnerBackend) exec(ctx context.Context, _ *link, req ExecRequest) (*runnerproto.ExecResult, error) {
	return b.r.Exec(ctx, runnerproto.ExecRequest{
		Argv:          req.Argv,
		Dir:           req.Dir,
		TimeoutMillis: req.Timeout.Milliseconds(),
		HeadBytes:     req.HeadBytes,
		TailBytes:     req.TailBytes,
	})
}

// exec runs one command in its own SSH session, the way `limactl shell` does.
func (sessionBackend) exec(ctx context.Context, l *link, req ExecRequest) (*runnerproto.ExecResult, error) {
	script := "cd " + shellquote.Quote(req.Dir) + ` || exit 1; exec "$SHELL" -l -c ` + shellquote.Quote(shellquote.JoinCommand(req.Argv))
	r, err := l.t.Exec(ctx, sshlink.ExecRequest{Script: script, Timeout: req.Timeout, HeadBytes: req.HeadBytes, TailBytes: req.TailBytes})
	if r == nil {
		return nil, err
	}
	return &runnerproto.ExecResult{
		ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, Canceled: r.Canceled,
		Stdout: r.Stdout, Stderr: r.Stderr, DurationMillis: r.DurationMillis,
	}, err
}
