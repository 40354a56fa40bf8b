package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
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
	if errors.Is(err, errNoSession) && l.client != nil {
		c.drop(l, err)
	}
	return out, err
}

// stream is Stream on the link l, over whichever way it reaches the guest.
func (l *link) stream(ctx context.Context, script string, in io.Reader) ([]byte, error) {
	if l.master != nil {
		return streamMaster(ctx, l.master, script, in)
	}
	s, err := l.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoSession, err)
	}
	defer s.Close()
	stdout := &cappedBuffer{limit: MaxStreamOutput, stop: func() { s.Close() }}
	stderr := headtail.New(2000, 2000)
	s.Stdout, s.Stderr = stdout, stderr
	if in != nil {
		s.Stdin = in
	}
	if err := s.Start(script); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
	return streamResult(stdout, stderr, err)
}

// streamMaster is Stream in an ssh client process through the instance's ControlMaster.
func streamMaster(ctx context.Context, m *master, script string, in io.Reader) ([]byte, error) {
	c := m.command("--", m.host, script)
	stdout := &cappedBuffer{limit: MaxStreamOutput, stop: func() { _ = c.Process.Kill() }}
	stderr := headtail.New(2000, 2000)
	c.Stdout, c.Stderr = stdout, stderr
	if in != nil {
		c.Stdin = in
	}
	p, err := m.start(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoSession, err)
	}
	select {
	case <-p.done:
		err = p.err
	case <-ctx.Done():
		p.kill()
		<-p.done
		return nil, ctx.Err()
	}
	return streamResult(stdout, stderr, err)
}

// streamResult is what a script run by Stream gave: its stdout, or an error with the head
// and tail of its stderr; never more than MaxStreamOutput.
func streamResult(stdout *cappedBuffer, stderr *headtail.Buffer, err error) ([]byte, error) {
	if stdout.over {
		return nil, fmt.Errorf("the guest printed more than %d bytes where a script's output was expected (a login script that prints without end?): stopped", MaxStreamOutput)
	}
	if err != nil {
		o := stderr.Output()
		msg := strings.TrimSpace(string(o.Head))
		if len(o.Tail) > 0 {
			msg += "..." + strings.TrimSpace(string(o.Tail))
		}
		return stdout.buf.Bytes(), fmt.Errorf("%w: %s", err, msg)
	}
	return stdout.buf.Bytes(), nil
}

// MaxStreamOutput bounds what Stream keeps of a script's stdout: everything read from the guest
// has a cap (a ~/.bashrc that prints forever must not grow the host's memory without end).
const MaxStreamOutput = 16 << 20

// cappedBuffer keeps up to limit bytes and fails the write that goes past it, which ends the
// session's copy of its output.
type cappedBuffer struct {
	buf   bytes.Buffer
	limit int
	over  bool
	stop  func() // closes the session: the guest may go on printing, unread
}

var errOutputCap = errors.New("output over the cap")

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.limit {
		if !c.over {
			c.over = true
			c.stop()
		}
		return 0, errOutputCap
	}
	return c.buf.Write(p)
}
