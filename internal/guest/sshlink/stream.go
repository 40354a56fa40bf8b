package sshlink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
)

// streamMaster is Stream in an ssh client process through the instance's ControlMaster.
//
// The master may refuse the session (ErrMasterFull), and the caller then gives in to a
// connection of our own: in must still be unread. So the script first prints a marker on
// stdout, and in is read only once the marker came back, that is, once the session runs.
func streamMaster(ctx context.Context, m *Master, script string, in io.Reader) ([]byte, error) {
	c := m.command("--", m.host, "printf "+streamStarted+"; "+script)
	stdout := &cappedBuffer{limit: MaxStreamOutput, stop: func() { _ = c.Process.Kill() }}
	gate := &startGate{w: stdout, started: make(chan struct{})}
	stderr := headtail.New(2000, 2000)
	c.Stdout, c.Stderr = gate, stderr
	var stdin io.WriteCloser
	if in != nil {
		var err error
		if stdin, err = c.StdinPipe(); err != nil {
			return nil, err
		}
	}
	p, err := m.start(c)
	if err != nil {
		// Not ErrNoSession: no connection of ours to drop (the process did not start).
		return nil, fmt.Errorf("cannot open an ssh session: %v", err)
	}
	if in != nil {
		// Our own copy, not exec's: its Wait would wait for a copy that waits for the gate.
		go func() {
			defer stdin.Close()
			select {
			case <-gate.started:
				if gate.seen {
					_, _ = io.Copy(stdin, in)
				}
			case <-p.done:
			}
		}()
	}
	select {
	case <-p.done:
		err = p.err
	case <-ctx.Done():
		p.kill()
		<-p.done
		return nil, ctx.Err()
	}
	gate.finish()
	if o := stderr.Output(); err != nil && !gate.seen && RefusedExit(err, string(o.Head)) {
		return nil, ErrMasterFull
	}
	return streamResult(stdout, stderr, err)
}

// streamStarted is what a script run through the master prints first (see streamMaster).
const streamStarted = "LIMACTL-MCP-STREAM:"

// startGate passes a script's stdout on to w without the streamStarted marker in front of
// it (whatever the user's shell printed before it stays), and opens once it has seen it.
type startGate struct {
	w       io.Writer
	started chan struct{} // closed when the marker was seen, or the process is gone
	seen    bool
	once    sync.Once
	pending []byte // what may be the start of the marker
	passed  bool
}

func (g *startGate) Write(p []byte) (int, error) {
	if g.passed {
		return g.w.Write(p)
	}
	n := len(p)
	g.pending = append(g.pending, p...)
	if i := bytes.Index(g.pending, []byte(streamStarted)); i >= 0 {
		rest := append(g.pending[:i:i], g.pending[i+len(streamStarted):]...)
		g.pending, g.passed, g.seen = nil, true, true
		g.close()
		if _, err := g.w.Write(rest); err != nil {
			return 0, err
		}
		return n, nil
	}
	// Not yet: keep no more than the marker's length minus one at the end (it may go on in the
	// next write); the rest is output of the user's shell before the script.
	if keep := len(streamStarted) - 1; len(g.pending) > keep {
		head := g.pending[:len(g.pending)-keep]
		g.pending = append([]byte(nil), g.pending[len(g.pending)-keep:]...)
		if _, err := g.w.Write(head); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (g *startGate) close() { g.once.Do(func() { close(g.started) }) }

// finish is called once the process is gone: the gate opens (for nothing), and what was held
// back as a possible start of the marker is passed on.
func (g *startGate) finish() {
	g.close()
	if !g.passed && len(g.pending) > 0 {
		_, _ = g.w.Write(g.pending)
		g.pending = nil
	}
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

// MaxStreamOutput bounds what Transport.Stream keeps of a script's stdout: everything read from the guest
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
