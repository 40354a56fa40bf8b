//go:build unix

// Package terminal runs commands in a Lima guest with the caller's own standard streams, as
// `limactl shell` does (used by the shell command only): a PTY when asked, through the
// instance's ControlMaster or a connection of our own (guest/sshlink). It is not the guest
// connection of the tools and the review (package guest): no runner, no SFTP.
package terminal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/term"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// Terminal reaches the guest for commands that a person (or a script) runs with the caller's
// own standard streams, as `limactl shell` does: through the instance's ControlMaster with
// OpenSSH's client when a master answers (it handles the PTY: raw mode, window size and its
// changes, Ctrl-C as a byte to the guest), otherwise on a connection of our own
// (golang.org/x/crypto/ssh), where this package does the same. It is separate from Conn: it
// starts no runner and no SFTP, so that a command starts within one ssh session's time.
type Terminal struct {
	target *sshlink.Target
	log    *slog.Logger
	m      *sshlink.Master // nil: a connection of our own

	mu     sync.Mutex
	client *ssh.Client

	// agent, when set (AsAgent), runs every script as the agent's user.
	agent *guest.Agent
	setup *guest.AgentSetup
	// envFile, without an agent (WithEnvFile), is read into every script's environment.
	envFile string
}

// AsAgent makes the terminal run its scripts as the agent's user under its network policy,
// with the proxy settings of its environment file. setup is what Conn.Setup reported: the
// agent must have been set up (since the VM's boot) before a script of its runs.
func (tm *Terminal) AsAgent(a *guest.Agent, setup *guest.AgentSetup) {
	tm.agent, tm.setup = a, setup
}

// WithEnvFile makes every script of the Lima user read the guest file path (KEY=VALUE lines)
// into its environment first: the secrets' environment under the network policy open
// (guest.Conn.EnvFile).
func (tm *Terminal) WithEnvFile(path string) { tm.envFile = path }

// asAgent wraps script for the agent's user, and with the environment file (unchanged without
// either).
func (tm *Terminal) asAgent(script string) string {
	if tm.agent == nil {
		return readEnvFile(tm.envFile) + script
	}
	pre := ""
	if tm.setup != nil {
		pre = readEnvFile(tm.setup.EnvFile)
	}
	return tm.agent.As(tm.runner(), pre+script)
}

// readEnvFile is the script's line that exports the KEY=VALUE lines of path, read (not
// sourced: the values are data); "" for no path.
func readEnvFile(path string) string {
	if path == "" {
		return ""
	}
	return `while IFS= read -r kv || [ -n "$kv" ]; do case $kv in ''|'#'*) continue;; esac; export "$kv"; done < ` + shellquote.Quote(path) + "\n"
}

// runner is the verified runner the agent's scripts start through ("" without a setup: they
// then run nothing).
func (tm *Terminal) runner() string {
	if tm.setup == nil {
		return ""
	}
	return tm.setup.Runner
}

// Open picks how to reach the guest of t; it makes no connection yet.
func Open(t *sshlink.Target, log *slog.Logger) *Terminal {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tm := &Terminal{target: t, log: log}
	if m, err := sshlink.NewMaster(t); err == nil {
		tm.m = m
	} else {
		log.Debug("not using the instance's ssh ControlMaster for the terminal; connecting directly", "reason", err)
	}
	return tm
}

// Via says how the terminal reaches the guest.
func (tm *Terminal) Via() sshlink.Via {
	if tm.m != nil {
		return sshlink.ViaControlMaster
	}
	return sshlink.ViaSSH
}

// Close ends the connection of our own, if one was made.
func (tm *Terminal) Close() {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.client != nil {
		_ = tm.client.Close()
		tm.client = nil
	}
}

// Request is a script run in the guest with the caller's streams.
type Request struct {
	// Script is a POSIX sh script, run as the guest user by the user's login shell (as
	// `limactl shell` runs its own; an sh-compatible shell: bash, zsh, dash...). It is on
	// command lines (ssh's, the guest shell's, sudo's under an agent, and so in the guest's
	// journal): it must hold no secret. Values travel on the standard input of Input.
	Script string
	// TTY asks for a PTY in the guest; Stdin must then be a terminal (it is put in raw mode
	// while the script runs, and restored after).
	TTY bool
	// Term is TERM for the PTY.
	Term           string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// ExitStatus is how a script ended: its exit code, or 128+N when a signal N killed it (as a
// shell reports it); 255 when ssh itself failed.
type ExitStatus int

// Run runs req and returns the script's exit status. When ctx ends first, the session is
// ended (the guest program gets SIGHUP from its PTY, or the end of its input) and ctx's error
// is returned.
func (tm *Terminal) Run(ctx context.Context, req Request) (ExitStatus, error) {
	if req.TTY && ttyFd(req.Stdin) < 0 {
		return 0, errors.New("a PTY needs a terminal on standard input")
	}
	req.Script = tm.asAgent(req.Script)
	if tm.m != nil {
		st, err := tm.runMaster(ctx, req)
		if !errors.Is(err, sshlink.ErrMasterFull) {
			return st, err
		}
		// Nothing ran; this terminal goes on over a connection of its own.
		tm.log.Debug("the ControlMaster refused a session; connecting directly", "reason", err)
		tm.m = nil
	}
	return tm.runDirect(ctx, req)
}

// refusalFilter passes ssh's stderr on to w, except the master's refusal of the session (its
// first line) and what ssh prints after it, which the caller answers by going on over a
// connection of its own.
type refusalFilter struct {
	w       io.Writer
	first   []byte // the first line, until it is complete
	decided bool
	refused bool
}

func (f *refusalFilter) Write(p []byte) (int, error) {
	if f.refused {
		return len(p), nil // ssh's own last words after the refusal (its try without the master)
	}
	if f.decided {
		return f.w.Write(p)
	}
	f.first = append(f.first, p...)
	i := bytes.IndexByte(f.first, '\n')
	if i < 0 && len(f.first) < 4096 {
		return len(p), nil
	}
	f.decide()
	return len(p), nil
}

func (f *refusalFilter) decide() {
	if f.decided {
		return
	}
	f.decided = true
	if sshlink.MasterRefused(string(f.first)) {
		f.refused = true
		return
	}
	if len(f.first) > 0 {
		_, _ = f.w.Write(f.first)
	}
	f.first = nil
}

// runMaster runs req through the ControlMaster, with OpenSSH's client on the caller's own
// terminal.
func (tm *Terminal) runMaster(ctx context.Context, req Request) (ExitStatus, error) {
	// Not in a process group of its own: with a PTY, ssh reads the terminal, which only the
	// foreground process group may. Its environment is ours minus everything but what ssh
	// itself needs (nothing is sent to the guest but TERM, with the PTY request).
	cmd := tm.m.Command(req.TTY, req.Term, "--", tm.m.Host(), req.Script)
	stderr := &refusalFilter{w: req.Stderr}
	if stderr.w == nil {
		stderr.w = io.Discard
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdin, req.Stdout, stderr
	// Streams that are not files are copied: do not wait for the copy forever once ssh is gone
	// (the master may hold the other ends a little longer).
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waitc:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case werr = <-waitc:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			werr = <-waitc
		}
	}
	stderr.decide()
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if stderr.refused && sshlink.RefusedExit(werr, string(stderr.first)) {
		return 0, sshlink.ErrMasterFull
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0, nil
	case errors.Is(werr, exec.ErrWaitDelay):
		// ssh exited 0; the copy of a Stdin that is not a file (shell's values ahead of the
		// caller's input) was still waiting for input that the guest will never read.
		return 0, nil
	case errors.As(werr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ExitStatus(128 + int(ws.Signal())), nil
		}
		return ExitStatus(ee.ExitCode()), nil
	}
	return 0, werr
}

// ttyFd is the descriptor of r when it is a terminal, else -1.
func ttyFd(r io.Reader) int {
	f, ok := r.(*os.File)
	if !ok || f == nil || !term.IsTerminal(int(f.Fd())) {
		return -1
	}
	return int(f.Fd())
}

// dial makes (once) the connection of our own.
func (tm *Terminal) dial(ctx context.Context) (*ssh.Client, error) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.client != nil {
		return tm.client, nil
	}
	client, err := sshlink.Dial(ctx, tm.target)
	if err != nil {
		return nil, err
	}
	tm.client = client
	return tm.client, nil
}

// runDirect runs req in a session of a connection of our own.
func (tm *Terminal) runDirect(ctx context.Context, req Request) (ExitStatus, error) {
	client, err := tm.dial(ctx)
	if err != nil {
		return 0, err
	}
	s, err := client.NewSession()
	if err != nil {
		return 0, fmt.Errorf("cannot open an ssh session: %w", err)
	}
	defer s.Close()
	s.Stdout, s.Stderr = req.Stdout, req.Stderr
	if req.TTY {
		fd := ttyFd(req.Stdin)
		w, h, err := term.GetSize(fd)
		if err != nil {
			w, h = 80, 24
		}
		modes := ssh.TerminalModes{ssh.ECHO: 1, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}
		if err := s.RequestPty(req.Term, h, w, modes); err != nil {
			return 0, fmt.Errorf("the guest refused a PTY: %w", err)
		}
		old, err := term.MakeRaw(fd)
		if err != nil {
			return 0, fmt.Errorf("cannot put the terminal in raw mode: %w", err)
		}
		defer term.Restore(fd, old) //nolint:errcheck // nothing to do if the terminal is gone
		stopResize := watchResize(fd, s)
		defer stopResize()
	}
	if req.Stdin != nil {
		stdin, err := s.StdinPipe()
		if err != nil {
			return 0, err
		}
		// The copy ends with our process (a read on a terminal cannot be interrupted); at the
		// end of our input the guest program sees the end of its own.
		go func() {
			_, _ = io.Copy(stdin, req.Stdin)
			_ = stdin.Close()
		}()
	}
	if err := s.Start(req.Script); err != nil {
		return 0, err
	}
	waitc := make(chan error, 1)
	go func() { waitc <- s.Wait() }()
	select {
	case err = <-waitc:
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGHUP)
		_ = s.Close()
		return 0, ctx.Err()
	}
	var ee *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if sig := ee.Signal(); sig != "" {
			return ExitStatus(128 + signalNumber(sig)), nil
		}
		return ExitStatus(ee.ExitStatus()), nil
	case errors.As(err, &missing):
		return 255, nil
	}
	return 0, err
}

// signalNumber is the number of an ssh signal name ("INT"), 0 when unknown.
func signalNumber(name string) int {
	for _, s := range []struct {
		name string
		n    syscall.Signal
	}{{"HUP", syscall.SIGHUP}, {"INT", syscall.SIGINT}, {"QUIT", syscall.SIGQUIT}, {"KILL", syscall.SIGKILL},
		{"TERM", syscall.SIGTERM}, {"PIPE", syscall.SIGPIPE}, {"ABRT", syscall.SIGABRT}, {"SEGV", syscall.SIGSEGV}} {
		if s.name == name {
			return int(s.n)
		}
	}
	return 0
}

// Output runs script in the guest without a terminal and returns its standard output; its
// standard error is in the error of a script that fails.
func (tm *Terminal) Output(ctx context.Context, script string) (string, error) {
	return tm.Input(ctx, script, nil)
}

// Input is Output with data on the script's standard input: the way values that must be on no
// command line reach the guest (the script, which is on command lines, holds none; under an
// agent, sudo passes its standard input through and logs only the script).
func (tm *Terminal) Input(ctx context.Context, script string, data []byte) (string, error) {
	script = tm.asAgent(script)
	stdin := func() io.Reader {
		if data == nil {
			return nil
		}
		return bytes.NewReader(data)
	}
	if tm.m != nil {
		out, err := tm.m.OutputWith(ctx, script, stdin())
		if !errors.Is(err, sshlink.ErrMasterFull) {
			return out, err
		}
		// Nothing ran (the refusal comes before the session): data goes again, whole.
		tm.log.Debug("the ControlMaster refused a session; connecting directly", "reason", err)
		tm.m = nil
	}
	var stdout, stderr strings.Builder
	client, err := tm.dial(ctx)
	if err != nil {
		return "", err
	}
	s, err := client.NewSession()
	if err != nil {
		return "", fmt.Errorf("cannot open an ssh session: %w", err)
	}
	defer s.Close()
	s.Stdout, s.Stderr = &stdout, &stderr
	if in := stdin(); in != nil {
		s.Stdin = in
	}
	if err := s.Start(script); err != nil {
		return "", err
	}
	waitc := make(chan error, 1)
	go func() { waitc <- s.Wait() }()
	select {
	case err = <-waitc:
	case <-ctx.Done():
		_ = s.Close()
		return "", ctx.Err()
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%w (%s)", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
