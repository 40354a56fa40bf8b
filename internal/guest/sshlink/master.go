package sshlink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"
)

// Via says how a connection reaches the guest: which of the two Transports carries it.
type Via string

const (
	// ViaControlMaster: OpenSSH client processes through the instance's ControlMaster (the
	// ssh.sock that Lima's host agent keeps open), one for SFTP and one for the runner: a new
	// process pays a session on an established connection (tens of milliseconds), not a
	// handshake of its own (seconds on an emulated guest).
	ViaControlMaster Via = "controlmaster"
	// ViaSSH: a connection of our own (golang.org/x/crypto/ssh), the fallback.
	ViaSSH Via = "ssh"
)

// masterSFTPTimeout bounds the start of SFTP through the ControlMaster: a master that does not
// serve within it is given up for a connection of our own.
const masterSFTPTimeout = 10 * time.Second

// Master reaches the guest through an OpenSSH ControlMaster: every session is an OpenSSH client
// process (Proc) riding the master's connection.
type Master struct {
	ssh  string // the ssh executable
	sock string // the control socket
	user string
	host string
	port string
}

// NewMaster returns how to use t's ControlMaster, or why not: no socket, a socket that is not
// safely ours, no master answering on it, no ssh client.
func NewMaster(t *Target) (*Master, error) {
	if t.ControlPath == "" {
		return nil, errors.New("no control socket")
	}
	if err := ownSocket(t.ControlPath); err != nil {
		return nil, err
	}
	// A socket left behind by a master that died (kill -9, a host crash) refuses: cheap to
	// find out here, before an ssh process is spent on it.
	nc, err := net.DialTimeout("unix", t.ControlPath, time.Second)
	if err != nil {
		return nil, fmt.Errorf("no ControlMaster answers on %s: %w", t.ControlPath, err)
	}
	nc.Close()
	exe, err := exec.LookPath("ssh")
	if err != nil {
		return nil, fmt.Errorf("no ssh client: %w", err)
	}
	host, port, err := net.SplitHostPort(t.Addr)
	if err != nil {
		host, port = "127.0.0.1", "22"
	}
	return &Master{ssh: exe, sock: t.ControlPath, user: t.User, host: host, port: port}, nil
}

// Args is the ssh command line for a session through the master: the one place it is built
// (for the transport's sessions, and for a terminal's, which asks for a PTY with tty). As
// Lima's pkg/sshutil: ControlMaster=no uses the master and never becomes one;
// ProxyCommand=false makes ssh fail at once, instead of making a connection of its own (a
// handshake of seconds, the very cost this avoids), when the master is gone; -F /dev/null keeps
// the user's ssh configuration out, as Lima does.
func (m *Master) Args(tty bool, tail ...string) []string {
	t := "-T"
	if tty {
		t = "-t"
	}
	a := []string{
		"-F", "/dev/null",
		"-o", "ControlMaster=no",
		"-o", "ControlPath=" + strconv.Quote(strings.ReplaceAll(m.sock, "%", "%%")),
		"-o", "ControlPersist=no",
		"-o", "ProxyCommand=false",
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null",
		"-o", "LogLevel=ERROR",
		t, "-a", "-x", "-e", "none",
		"-l", m.user, "-p", m.port,
	}
	return append(a, tail...)
}

// ErrMasterFull: the master's connection refused a new session. The guest's sshd allows
// MaxSessions (10) per connection, and every process riding the master holds one or two
// (`limactl shell`, our servers before their handoff, review, status, shell...). The command
// did not run: the caller goes on over a connection of its own.
var ErrMasterFull = errors.New("the instance's ssh ControlMaster refused a new session (the guest's sshd allows 10 per connection)")

// MasterRefused says whether ssh's stderr (an exit of 255) is the master refusing a session:
// "mux_client_request_session: session request failed: Session open refused by peer".
func MasterRefused(stderr string) bool {
	return strings.Contains(stderr, "mux_client_request_session") && strings.Contains(stderr, "session request failed")
}

// RefusedExit says whether a process that exited with err and printed stderr was the master
// refusing its session.
func RefusedExit(err error, stderr string) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 255 && MasterRefused(stderr)
}

// proc is one ssh client process through the master.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
	err  error         // how it exited, once done is closed
	once sync.Once
}

// Command is an ssh client command for a session through the master running tail (ssh's
// arguments after the options: "--", host, command), with Args and its environment.
func (m *Master) Command(tty bool, termName string, tail ...string) *exec.Cmd {
	cmd := exec.Command(m.ssh, m.Args(tty, tail...)...)
	// Only what ssh needs of our environment, which may hold the person's secrets (the values
	// `shell --env` passes by name): a process's environment is no place for them.
	cmd.Env = Env(termName)
	return cmd
}

// Host is the guest's host name for ssh's command line.
func (m *Master) Host() string { return m.host }

func (m *Master) command(tail ...string) *exec.Cmd {
	cmd := m.Command(false, "", tail...)
	setProcAttr(cmd)
	// The master holds copies of our pipes while the session lasts: do not wait for them
	// forever once the process is gone.
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

func (m *Master) start(cmd *exec.Cmd) (*proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// kill ends the process; the session it carried ends when the master sees it go (and when the
// guest side reads the end of its stdin).
func (p *proc) kill() {
	p.once.Do(func() {
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
	})
}

// pipe starts cmd (run by the guest user's shell) with pipes on its stdin and stdout.
func (m *Master) pipe(cmd string, stderr io.Writer) (io.WriteCloser, io.Reader, *proc, error) {
	c := m.command("--", m.host, cmd)
	return m.startPipes(c, stderr)
}

func (m *Master) startPipes(c *exec.Cmd, stderr io.Writer) (io.WriteCloser, io.Reader, *proc, error) {
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	c.Stderr = stderr
	p, err := m.start(c)
	if err != nil {
		return nil, nil, nil, err
	}
	return stdin, stdout, p, nil
}

// sftp starts the guest's sftp subsystem through the master.
func (m *Master) sftp(ctx context.Context) (*sftp.Client, *proc, error) {
	var stderr strings.Builder
	var mu sync.Mutex
	c := m.command("-s", "--", m.host, "sftp")
	stdin, stdout, p, err := m.startPipes(c, lockedWriter{&mu, &stderr})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, masterSFTPTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, p.kill)
	defer stop()
	client, err := sftp.NewClientPipe(stdout, stdin, sftp.UseConcurrentWrites(true), sftp.UseConcurrentReads(true))
	if err != nil {
		p.kill()
		<-p.done
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return nil, nil, fmt.Errorf("sftp through the ControlMaster: %w (%s)", err, strings.TrimSpace(stderr.String()))
	}
	return client, p, nil
}

// output runs cmd through the master and returns its stdout; errMasterFull when the master
// refused the session (nothing ran).
func (m *Master) output(ctx context.Context, cmd string) (string, error) {
	return m.OutputWith(ctx, cmd, nil)
}

// OutputWith runs cmd through the master with in on cmd's standard input (nil: none).
func (m *Master) OutputWith(ctx context.Context, cmd string, in io.Reader) (string, error) {
	c := m.command("--", m.host, cmd)
	c.Stdin = in
	stderr := newCapBuffer(64 << 10)
	c.Stderr = stderr
	stdout := newCapBuffer(MaxCommandOutput)
	c.Stdout = stdout
	p, err := m.start(c)
	if err != nil {
		return "", err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.kill()
		<-p.done
		return "", ctx.Err()
	}
	switch {
	case p.err != nil && RefusedExit(p.err, stderr.buf.String()):
		return "", ErrMasterFull
	case p.err != nil:
		return "", fmt.Errorf("%w (%s)", p.err, strings.TrimSpace(stderr.buf.String()))
	}
	return stdout.result(cmd)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Env is the environment of an ssh client: what it needs to run, and TERM (for a PTY;
// "": none).
func Env(termName string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if termName != "" {
		env = append(env, "TERM="+termName)
	}
	return env
}
