package guest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
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

// ExecResult is how a command ended.
type ExecResult = runnerproto.ExecResult

// Exec runs a command in the guest: through the runner when it is up (one round trip), else
// in its own SSH session through a login shell, as `limactl shell --workdir DIR` does. When
// ctx ends, the command's process group is killed and ctx's error is returned with whatever
// the command printed until then.
func (c *Conn) Exec(ctx context.Context, req ExecRequest) (*ExecResult, error) {
	for attempt := 0; ; attempt++ {
		l, err := c.get(ctx)
		if err != nil {
			return nil, err
		}
		var res *ExecResult
		if l.runner != nil {
			var resp *runnerproto.Response
			resp, err = l.runner.call(ctx, &runnerproto.Request{Exec: &runnerproto.ExecRequest{
				Argv:          req.Argv,
				Dir:           req.Dir,
				TimeoutMillis: req.Timeout.Milliseconds(),
				HeadBytes:     req.HeadBytes,
				TailBytes:     req.TailBytes,
			}})
			if resp != nil {
				res = resp.Exec
				if res == nil && err == nil {
					err = fmt.Errorf("the guest runner failed: %s", resp.Error)
				}
			}
		} else if l.client != nil {
			res, err = execSession(ctx, l.client, req)
		} else {
			err = fmt.Errorf("%w: no runner", errLinkDown) // a link through the master always has one
		}
		if err != nil && !errors.Is(err, ctx.Err()) && (IsConnectionError(err) || errors.Is(err, errNoSession)) {
			c.drop(l, err)
			if attempt == 0 && errors.Is(err, errNoSession) {
				continue // nothing ran: safe to try once more on a new connection
			}
			return nil, fmt.Errorf("%w; it reconnects on the next call (the command may or may not have run)", err)
		}
		return res, err
	}
}

var errNoSession = errors.New("cannot open an ssh session")

// execSession runs one command in its own SSH session, the way `limactl shell` does.
func execSession(ctx context.Context, client *ssh.Client, req ExecRequest) (*ExecResult, error) {
	start := time.Now()
	s, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoSession, err)
	}
	defer s.Close()
	script := "cd " + shellquote.Quote(req.Dir) + ` || exit 1; exec "$SHELL" -l -c ` + shellquote.Quote(shellquote.JoinCommand(req.Argv))
	stdout, stderr := headtail.New(req.HeadBytes, req.TailBytes), headtail.New(req.HeadBytes, req.TailBytes)
	s.Stdout, s.Stderr = stdout, stderr
	if err := s.Start(script); err != nil {
		return nil, err
	}
	waitc := make(chan error, 1)
	go func() { waitc <- s.Wait() }()
	res := &ExecResult{}
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var ctxErr error
	select {
	case err = <-waitc:
	case <-timeout:
		res.TimedOut = true
	case <-ctx.Done():
		res.Canceled, ctxErr = true, ctx.Err()
	}
	if res.TimedOut || res.Canceled {
		_ = s.Signal(ssh.SIGKILL)
		_ = s.Close()
		select {
		case err = <-waitc:
		case <-time.After(5 * time.Second):
		}
	}
	var ee *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitStatus()
		if sig := ee.Signal(); sig != "" {
			res.ExitCode, res.Signal = -1, "SIG"+sig
		}
	default:
		res.ExitCode = -1
	}
	res.Stdout, res.Stderr = stdout.Output(), stderr.Output()
	res.DurationMillis = time.Since(start).Milliseconds()
	return res, ctxErr
}
