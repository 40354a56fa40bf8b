package sshlink

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/pkg/sftp"
)

// masterTransport is the Transport through the instance's ControlMaster: every session is an
// ssh client process riding the master's connection. Closing it ends the processes it started
// with pipes (SFTP's, the runner's, the agent's SFTP); the master itself is Lima's.
type masterTransport struct {
	m *Master

	mu     sync.Mutex
	procs  []*proc
	closed bool
	done   chan struct{}
}

// NewMasterTransport returns the Transport through m.
func NewMasterTransport(m *Master) Transport {
	return &masterTransport{m: m, done: make(chan struct{})}
}

func (t *masterTransport) Via() Via { return ViaControlMaster }

// ListenUnix is refused: see ErrNoForward.
func (t *masterTransport) ListenUnix(string) (net.Listener, error) { return nil, ErrNoForward }

// ListenTCP refuses as ListenUnix does.
func (t *masterTransport) ListenTCP(string) (net.Listener, error) { return nil, ErrNoForward }

func (t *masterTransport) Done() <-chan struct{} { return t.done }

// Keepalive: the master keeps its own connection alive.
func (t *masterTransport) Keepalive(time.Duration, func(error)) {}

// keep records p, ended with the transport (at once when it is closed already).
func (t *masterTransport) keep(p *proc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		p.kill()
		return
	}
	t.procs = append(t.procs, p)
}

func (t *masterTransport) Close() {
	t.mu.Lock()
	procs := t.procs
	if !t.closed {
		t.closed = true
		close(t.done)
	}
	t.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
}

func (t *masterTransport) Pipe(cmd string, stderr io.Writer) (*Pipes, error) {
	stdin, stdout, p, err := t.m.pipe(cmd, stderr)
	if err != nil {
		return nil, err
	}
	t.keep(p)
	return &Pipes{Stdin: stdin, Stdout: stdout, Stop: func() {
		stdin.Close() // the guest side reads the end of its input and exits
		p.kill()
	}, Done: p.done}, nil
}

func (t *masterTransport) SFTP(ctx context.Context) (*sftp.Client, <-chan struct{}, error) {
	sc, p, err := t.m.sftp(ctx)
	if err != nil {
		return nil, nil, err
	}
	t.keep(p)
	return sc, p.done, nil
}

func (t *masterTransport) Output(ctx context.Context, cmd string) (string, error) {
	return t.m.output(ctx, cmd)
}

func (t *masterTransport) Stream(ctx context.Context, script string, in io.Reader) ([]byte, error) {
	return streamMaster(ctx, t.m, script, in)
}

// Exec: a connection through the master always has the runner, which runs commands.
func (t *masterTransport) Exec(context.Context, ExecRequest) (*ExecResult, error) {
	return nil, fmt.Errorf("%w: no runner", ErrLinkDown)
}
