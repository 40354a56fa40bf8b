package sshlink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
)

// Dial makes a connection of our own to t's sshd (golang.org/x/crypto/ssh): the fallback
// when the instance's ControlMaster cannot be used. The handshake fails when the guest says
// nothing for handshakeQuiet (15 s), or at handshakeMax (2 min) or ctx's end, whichever comes
// first; a connection the guest's sshd closes before it says anything is made again a few
// times (see handshake.go).
func Dial(ctx context.Context, t *Target) (*ssh.Client, error) {
	cfg := &ssh.ClientConfig{
		User:            t.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(t.Signers...)},
		HostKeyCallback: t.HostKeyCallback,
	}
	// ChaCha20-Poly1305 first: guests often run without AES instructions (an emulated CPU,
	// a baseline CPU model), where AES-GCM is several times slower for the guest's sshd.
	cfg.Ciphers = []string{"chacha20-poly1305@openssh.com", "aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "aes128-ctr", "aes256-ctr"}
	if cfg.HostKeyCallback == nil {
		cfg.HostKeyCallback = ssh.InsecureIgnoreHostKey() //nolint:gosec // see Target.HostKeyCallback
	}
	hard := time.Now().Add(handshakeMax)
	if dl, ok := ctx.Deadline(); ok && dl.Before(hard) {
		hard = dl
	}
	for try := 0; ; try++ {
		client, qc, err := dialOnce(ctx, t, cfg, hard)
		if err == nil {
			return client, nil
		}
		if qc == nil || try >= dropRetries || !dropped(qc, err) || ctx.Err() != nil || !pauseBeforeRetry(ctx, hard) {
			return nil, err
		}
	}
}

// dialOnce makes one connection and its handshake; qc is the connection when one was made.
func dialOnce(ctx context.Context, t *Target, cfg *ssh.ClientConfig, hard time.Time) (*ssh.Client, *quietConn, error) {
	d := net.Dialer{Deadline: hard, Timeout: handshakeQuiet}
	nc, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach the ssh server of instance %q at %s: %w", t.Name, t.Addr, err)
	}
	// The handshake takes no context: closing the connection ends it when ctx ends.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	qc := newQuietConn(nc, handshakeQuiet, hard)
	sc, chans, reqs, err := ssh.NewClientConn(qc, t.Addr, cfg)
	if err != nil {
		nc.Close()
		why := ""
		if errors.Is(err, os.ErrDeadlineExceeded) {
			why = fmt.Sprintf(" (the guest's sshd said nothing for %s, or the time for the handshake ran out)", handshakeQuiet)
		}
		return nil, qc, fmt.Errorf("ssh handshake with instance %q at %s failed%s: %w", t.Name, t.Addr, why, err)
	}
	qc.finish()
	return ssh.NewClient(sc, chans, reqs), qc, nil
}

// Direct is the Transport over a connection of our own: every session is a channel of it.
type Direct struct {
	target *Target
	client *ssh.Client
	done   chan struct{} // closed when the connection is gone
}

// NewDirect makes a connection of our own to t (Dial) and returns it as a Transport.
func NewDirect(ctx context.Context, t *Target) (*Direct, error) {
	client, err := Dial(ctx, t)
	if err != nil {
		return nil, err
	}
	d := &Direct{target: t, client: client, done: make(chan struct{})}
	go func() {
		_ = client.Wait()
		close(d.done)
	}()
	return d, nil
}

// ListenUnix asks sshd to listen on path (streamlocal-forward@openssh.com); the connections
// made there come as channels of this connection.
func (d *Direct) ListenUnix(path string) (net.Listener, error) {
	ln, err := d.client.ListenUnix(path)
	if err != nil {
		return nil, fmt.Errorf("asking the guest's sshd to listen on %s: %w", path, err)
	}
	return ln, nil
}

// ListenTCP asks sshd to listen on addr (tcpip-forward; port 0: sshd picks one, which the
// listener's Addr gives).
func (d *Direct) ListenTCP(addr string) (net.Listener, error) {
	ln, err := d.client.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("asking the guest's sshd to listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Via is ViaSSH.
func (d *Direct) Via() Via { return ViaSSH }

// Done is closed when the connection is gone.
func (d *Direct) Done() <-chan struct{} { return d.done }

// Close closes the connection, which ends every session on it.
func (d *Direct) Close() { _ = d.client.Close() }

// Keepalive asks the guest's sshd for an answer every interval until the connection is gone,
// and calls dead (once) when one fails or does not come within three intervals.
func (d *Direct) Keepalive(interval time.Duration, dead func(error)) {
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-d.done:
				return
			case <-t.C:
				errc := make(chan error, 1)
				go func() {
					_, _, err := d.client.SendRequest("keepalive@openssh.com", true, nil)
					errc <- err
				}()
				select {
				case err := <-errc:
					if err != nil {
						dead(fmt.Errorf("keepalive: %w", err))
						return
					}
				case <-time.After(3 * interval):
					dead(errors.New("keepalive: no answer"))
					return
				}
			}
		}
	}()
}

// SFTP starts the guest's sftp subsystem on the connection. Its done is nil: the connection's
// Done covers it.
func (d *Direct) SFTP(context.Context) (*sftp.Client, <-chan struct{}, error) {
	sc, err := sftp.NewClient(d.client, sftp.UseConcurrentWrites(true), sftp.UseConcurrentReads(true))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot start sftp in instance %q (is openssh-sftp-server installed in the guest?): %w", d.target.Name, err)
	}
	return sc, nil, nil
}

// Pipe starts cmd in a session of its own with pipes on its stdin and stdout.
func (d *Direct) Pipe(cmd string, stderr io.Writer) (*Pipes, error) {
	s, err := d.client.NewSession()
	if err != nil {
		return nil, err
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Stderr = stderr
	if err := s.Start(cmd); err != nil {
		s.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		_ = s.Wait()
		close(done)
	}()
	return &Pipes{Stdin: stdin, Stdout: stdout, Stop: func() { s.Close() }, Done: done}, nil
}

// Output runs cmd in a session of its own and returns its stdout (at most MaxCommandOutput).
func (d *Direct) Output(ctx context.Context, cmd string) (string, error) {
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := d.runSession(cmd)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// runSession runs one command in a new session and returns its stdout.
func (d *Direct) runSession(cmd string) (string, error) {
	s, err := d.client.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	stderr := newCapBuffer(64 << 10)
	stdout := newCapBuffer(MaxCommandOutput)
	s.Stdout, s.Stderr = stdout, stderr
	if err := s.Run(cmd); err != nil {
		return "", fmt.Errorf("%s: %w (%s)", Truncate(cmd, 200), err, strings.TrimSpace(stderr.buf.String()))
	}
	return stdout.result(cmd)
}

// Stream runs script in a session of its own with stdin fed from in (nil: none) and returns
// its stdout (at most MaxStreamOutput); ErrNoSession when no session could be opened.
func (d *Direct) Stream(ctx context.Context, script string, in io.Reader) ([]byte, error) {
	s, err := d.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoSession, err)
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

// Exec runs req.Script in a session of its own, the way `limactl shell` does; ErrNoSession
// when no session could be opened (nothing ran). When ctx ends, the command is killed and
// ctx's error is returned with what it printed until then.
func (d *Direct) Exec(ctx context.Context, req ExecRequest) (*ExecResult, error) {
	start := time.Now()
	s, err := d.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoSession, err)
	}
	defer s.Close()
	stdout, stderr := headtail.New(req.HeadBytes, req.TailBytes), headtail.New(req.HeadBytes, req.TailBytes)
	s.Stdout, s.Stderr = stdout, stderr
	if err := s.Start(req.Script); err != nil {
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
