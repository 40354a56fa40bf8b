package guest

import (
	"context"
	"errors"
	"io"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
)

// Stream runs a shell command in its own SSH session with stdin fed from in (which may be
// nil) and returns its stdout; it is how archives travel in one stream, and how the staging
// code runs its few setup commands. The command is interpreted by the user's shell.
func (c *Conn) Stream(ctx context.Context, script string, in io.Reader) ([]byte, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	out, err := l.stream(ctx, script, in)
	if errors.Is(err, sshlink.ErrMasterFull) {
		// Nothing ran: go on over a connection of our own (for this and later calls). in
		// was not read (ssh exits at the refusal, before the session).
		if l, err = c.offMaster(ctx, l, err); err != nil {
			return nil, err
		}
		return l.stream(ctx, script, in)
	}
	if errors.Is(err, sshlink.ErrNoSession) {
		c.drop(l, err)
	}
	return out, err
}

// output runs cmd with the Lima user's shell on l (a link of c.get) and returns its stdout. A
// master that refuses the session ran nothing: the call goes on over a connection of our own,
// as Stream does (status read a session's network record so while another session's server
// held the master's sessions, and failed).
func (c *Conn) output(ctx context.Context, l *link, cmd string) (string, error) {
	out, err := l.t.Output(ctx, cmd)
	if errors.Is(err, sshlink.ErrMasterFull) {
		if l, err = c.offMaster(ctx, l, err); err != nil {
			return "", err
		}
		return l.t.Output(ctx, cmd)
	}
	if errors.Is(err, sshlink.ErrNoSession) {
		c.drop(l, err)
	}
	return out, err
}

// stream is Stream on the link l.
func (l *link) stream(ctx context.Context, script string, in io.Reader) ([]byte, error) {
	if l.setup != nil {
		// The agent's link, once its user is set up (before, the Lima user installs the runner).
		script = l.agent.As(l.setup.Runner, script)
	}
	return l.t.Stream(ctx, script, in)
}
