package sshlink

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/pkg/sftp"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
)

// Transport is one way to the guest's sshd: its two implementations are Direct (a connection
// of our own) and the ControlMaster's (OpenSSH client processes through the instance's master,
// NewMasterTransport). Whoever holds one never asks which it is.
type Transport interface {
	// Via says which it is, for messages and logs.
	Via() Via
	// Pipe starts cmd (run by the guest user's shell) with pipes on its stdin and stdout.
	Pipe(cmd string, stderr io.Writer) (*Pipes, error)
	// SFTP starts the guest's sftp subsystem; done, when not nil, is closed when it ends.
	SFTP(ctx context.Context) (c *sftp.Client, done <-chan struct{}, err error)
	// Output runs cmd and returns its stdout (at most MaxCommandOutput).
	Output(ctx context.Context, cmd string) (string, error)
	// Stream runs script with stdin fed from in (nil: none) and returns its stdout (at most
	// MaxStreamOutput). ErrMasterFull: the master refused the session (nothing ran, in unread).
	Stream(ctx context.Context, script string, in io.Reader) ([]byte, error)
	// Exec runs a script in a session of its own (without the runner).
	Exec(ctx context.Context, req ExecRequest) (*ExecResult, error)
	// Keepalive watches the connection every interval and calls dead when it is gone (the
	// master keeps its own connection alive: nothing to do there).
	Keepalive(interval time.Duration, dead func(error))
	// ListenUnix asks the guest's sshd to listen on the unix socket path (a streamlocal
	// forward) and returns the listener of the connections made there; it ends with the
	// transport. The ControlMaster's refuses (ErrNoForward).
	ListenUnix(path string) (net.Listener, error)
	// ListenTCP asks the guest's sshd to listen on addr ("127.0.0.1:0": a port it picks; a
	// tcpip-forward, what `ssh -R` uses), as ListenUnix. The ControlMaster's refuses
	// (ErrNoForward).
	ListenTCP(addr string) (net.Listener, error)
	// Done is closed when the transport is gone.
	Done() <-chan struct{}
	// Close ends the transport and every session it started.
	Close()
}

// Pipes are a command started with pipes on its standard streams.
type Pipes struct {
	Stdin  io.WriteCloser
	Stdout io.Reader
	// Stop ends the command's session.
	Stop func()
	// Done is closed when the session has ended.
	Done <-chan struct{}
}

// ExecRequest is a script run in a session of its own (Transport.Exec).
type ExecRequest struct {
	Script  string
	Timeout time.Duration // 0: none
	// HeadBytes and TailBytes bound what is kept of each output stream.
	HeadBytes, TailBytes int
}

// ExecResult is how such a script ended.
type ExecResult struct {
	ExitCode       int
	Signal         string
	TimedOut       bool
	Canceled       bool
	Stdout, Stderr headtail.Output
	DurationMillis int64
}

// ErrNoForward: the transport cannot forward a guest socket to us. The ControlMaster's does not:
// `ssh -O forward -R guestsock:hostsock` would add the forward to Lima's shared master, which
// outlives this process (a forward left behind when it dies) and takes a host socket any
// process of the person could connect to; a connection of our own forwards over its own
// channels and ends with us.
var ErrNoForward = errors.New("forwarding a guest socket needs a connection of our own to the guest's sshd, not the instance's ControlMaster")

// ErrNoSession: no session could be opened on the connection (nothing ran).
var ErrNoSession = errors.New("cannot open an ssh session")

// ErrLinkDown: the connection to the guest broke.
var ErrLinkDown = errors.New("the connection to the guest was lost")

// Truncate cuts s to n bytes for a message.
func Truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
