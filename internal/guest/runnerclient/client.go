// Package runnerclient is the host's typed client of the guest runner (internal/runnerproto),
// over a small transport: a command started in the guest with pipes (Starter). Every reply
// is hostile input (the agent can replace the runner's file, or anything it reads): each
// method checks its reply against its request as its post-condition, and a reply that does
// not fit is an error wrapping ErrBadReply that stops the runner (the next start verifies a
// new one), never a panic. Requests and results are runnerproto's own types, imported openly
// by the callers: this package re-exports none of them. It does not place, verify or start
// the runner's file (package guest does), nor know how the guest is reached (guest/sshlink).
package runnerclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// Starter starts a command in the guest with pipes on its standard streams: the transport the
// client needs (both sshlink Transports are one).
type Starter interface {
	Pipe(cmd string, stderr io.Writer) (*sshlink.Pipes, error)
}

// StartTimeout bounds the start of the runner: the user's shell and one exec.
const StartTimeout = 60 * time.Second

// maxJunk bounds what the user's shell (its ~/.bashrc, say) may print on stdout before the
// runner starts.
const maxJunk = 1 << 20

// Client talks to one runner over one session.
type Client struct {
	stop   func() // ends the session
	stdin  io.WriteCloser
	hello  runnerproto.Hello
	stderr *headtail.Buffer

	wmu sync.Mutex // guards writes to stdin

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan *runnerproto.Response
	err     error         // why the runner is gone
	done    chan struct{} // closed when it is gone
	lane    *lane         // the fast lane, when it is up (lane.go)
}

func newClient() *Client {
	return &Client{
		stderr:  headtail.New(4096, 4096),
		pending: map[uint64]chan *runnerproto.Response{},
		done:    make(chan struct{}),
	}
}

// ServeArgs are the runner's arguments. With login, the runner gives the commands it runs the
// user's login environment (internal/runner/loginenv.go) without being started through a login
// shell: its start does not wait for the user's profile.
func ServeArgs(login bool) string {
	if login {
		return "serve --login"
	}
	return "serve"
}

// Launch starts cmd (which execs a verified runner) through s and reads its hello.
func Launch(ctx context.Context, s Starter, log *slog.Logger, cmd string) (*Client, error) {
	r := newClient()
	p, err := s.Pipe(cmd, r.stderr)
	if err != nil {
		return nil, err
	}
	r.stdin, r.stop = p.Stdin, p.Stop
	return r.awaitHello(ctx, log, bufio.NewReaderSize(p.Stdout, 64<<10))
}

// Waiting is a shell started in the guest before the runner is checked: it waits for a line on
// its stdin, the path of the runner the host has just verified, and execs it. The shell's start
// (a session and the user's profile) then overlaps the check instead of following it; nothing
// runs from the runner's file before the check.
type Waiting struct {
	r    *Client
	br   *bufio.Reader
	told bool
}

// StartWaiting starts the waiting shell through s.
func StartWaiting(s Starter, login bool) (*Waiting, error) {
	r := newClient()
	// sh's read takes one byte at a time from a pipe: nothing meant for the runner is lost.
	cmd := "exec sh -c " + shellquote.Quote(`IFS= read -r exe && exec "$exe" `+ServeArgs(login))
	p, err := s.Pipe(cmd, r.stderr)
	if err != nil {
		return nil, err
	}
	r.stdin, r.stop = p.Stdin, p.Stop
	return &Waiting{r: r, br: bufio.NewReaderSize(p.Stdout, 64<<10)}, nil
}

// Exec tells the shell to exec exe (verified) and reads the runner's hello.
func (w *Waiting) Exec(ctx context.Context, log *slog.Logger, exe string) (*Client, error) {
	if strings.ContainsAny(exe, "\n\x00") {
		return nil, fmt.Errorf("the runner's path %q cannot be passed on a line", exe)
	}
	w.told = true
	if _, err := io.WriteString(w.r.stdin, exe+"\n"); err != nil {
		w.r.stop()
		return nil, fmt.Errorf("starting the runner: %w (stderr: %q)", err, w.r.stderrText())
	}
	return w.r.awaitHello(ctx, log, w.br)
}

// Abandon ends a shell that was never told a path (nil: nothing to end).
func (w *Waiting) Abandon() {
	if w != nil && !w.told {
		w.r.stop()
	}
}

// NoHelloError: the runner's process started (or was meant to) but did not say hello as
// expected: its file may not be the runner (replaced by root, truncated by a crash or a full
// disk during an install).
type NoHelloError struct{ err error }

func (e *NoHelloError) Error() string { return e.err.Error() }
func (e *NoHelloError) Unwrap() error { return e.err }

// awaitHello reads the runner's hello (after whatever the user's shell printed) and starts reading
// its replies; on failure it stops the session.
func (r *Client) awaitHello(ctx context.Context, log *slog.Logger, br *bufio.Reader) (*Client, error) {
	var err error
	helloc := make(chan error, 1)
	go func() { helloc <- r.readHello(br) }()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case err = <-helloc:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = errors.New("timed out")
	}
	if err != nil {
		r.stop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("starting the runner: %w (stderr: %q)", err, r.stderrText())
		}
		return nil, &NoHelloError{fmt.Errorf("starting the runner: %w (stderr: %q)", err, r.stderrText())}
	}
	go r.readLoop(br)
	log.Debug("guest runner started", "pid", r.hello.PID, "shell", r.hello.Shell, "git", r.hello.HasGit, "login_env", r.hello.LoginEnv)
	return r, nil
}

// readHello skips whatever the user's shell printed before the runner took over stdout, up to
// the runner's first frame, which is its Hello.
func (r *Client) readHello(br *bufio.Reader) error {
	magic := []byte(runnerproto.Magic)
	var seen int
	for {
		b, err := br.ReadByte()
		if err != nil {
			return fmt.Errorf("the runner did not start: %w", err)
		}
		seen++
		if seen > maxJunk {
			return errors.New("the user's shell printed too much before the runner started")
		}
		if b != magic[0] {
			continue
		}
		peek, err := br.Peek(len(magic) - 1)
		if err == nil && bytes.Equal(peek, magic[1:]) {
			_, _ = br.Discard(len(magic) - 1)
			break
		}
	}
	var resp runnerproto.Response
	if err := runnerproto.ReadFrame(br, &resp); err != nil {
		return err
	}
	if err := checkHello(resp.Hello); err != nil {
		return err
	}
	r.hello = *resp.Hello
	return nil
}

// checkHello verifies the runner's first frame: the protocol's version, and fields that fit.
func checkHello(h *runnerproto.Hello) error {
	if h == nil || h.Version != runnerproto.Version {
		return errors.New("the runner in the guest speaks another protocol version")
	}
	if h.PID < 0 || h.UID < 0 || len(h.Home) > maxGuestPath || len(h.Shell) > maxGuestPath || len(h.LoginEnv) > 16 {
		return badReply("a hello of pid %d, uid %d, home of %d bytes", h.PID, h.UID, len(h.Home))
	}
	return nil
}

// Hello is what the runner said when it started (checked).
func (r *Client) Hello() runnerproto.Hello { return r.hello }

func (r *Client) readLoop(br *bufio.Reader) {
	err := r.readReplies(br, nil)
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: the runner exited (stderr: %q)", sshlink.ErrLinkDown, r.stderrText())
	} else {
		err = fmt.Errorf("%w: %v", sshlink.ErrLinkDown, err)
	}
	r.fail(err)
}

// readReplies hands each reply read from br to its call, until br ends (the error that ended
// it). On the lane l (nil: the channel), only replies to requests sent there: a reply to a call
// given up (its context ended), or to nothing sent there, is dropped.
func (r *Client) readReplies(br *bufio.Reader, l *lane) error {
	for {
		var resp runnerproto.Response
		if err := runnerproto.ReadFrame(br, &resp); err != nil {
			return err
		}
		r.mu.Lock()
		ch, ok := r.pending[resp.ID]
		if l != nil {
			ok = ok && l.sent[resp.ID] != nil
			delete(l.sent, resp.ID)
		}
		if ok {
			delete(r.pending, resp.ID)
		}
		r.mu.Unlock()
		if ok {
			ch <- &resp
		}
	}
}

func (r *Client) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.err = err
	close(r.done)
	for id, ch := range r.pending {
		delete(r.pending, id)
		close(ch)
	}
	r.stop()
}

// Close stops the runner's session.
func (r *Client) Close() { r.fail(errors.New("closed")) }

// Done is closed when the runner is gone (exited, closed, or stopped for a bad reply).
func (r *Client) Done() <-chan struct{} { return r.done }

// Idle says whether no call is waiting for an answer.
func (r *Client) Idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending) == 0
}

func (r *Client) stderrText() string {
	o := r.stderr.Output()
	return strings.TrimSpace(string(o.Head) + string(o.Tail))
}

// call sends req and waits for its response, which must pass check (the calling method's
// post-condition; an error reply passes when its text is within bounds). When ctx ends first
// and req is an exec, the command's process group is killed and the call waits briefly for
// what it printed.
func (r *Client) call(ctx context.Context, req *runnerproto.Request, check func(*runnerproto.Response) error) (*runnerproto.Response, error) {
	ch := make(chan *runnerproto.Response, 1)
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return nil, r.err
	}
	r.nextID++
	req.ID = r.nextID
	r.pending[req.ID] = ch
	r.mu.Unlock()
	if err := r.send(req); err != nil {
		r.fail(fmt.Errorf("%w: %v", sshlink.ErrLinkDown, err))
		return nil, r.err
	}
	var deadline <-chan time.Time
	if d := callDeadline(req); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, r.err
		}
		return r.checked(resp, check, nil)
	case <-deadline:
		r.fail(fmt.Errorf("%w: the guest runner did not answer within %s; it is started again on the next call", sshlink.ErrLinkDown, callDeadline(req)))
		return nil, r.err
	case <-ctx.Done():
	}
	if req.Exec != nil {
		_ = r.send(&runnerproto.Request{Signal: &runnerproto.SignalRequest{Target: req.ID}})
		select {
		case resp, ok := <-ch:
			if ok {
				return r.checked(resp, check, ctx.Err())
			}
		case <-time.After(5 * time.Second):
		}
	}
	r.mu.Lock()
	delete(r.pending, req.ID)
	r.mu.Unlock()
	return nil, ctx.Err()
}

// checked returns resp when it passes check; a runner that sends a malformed reply is stopped
// (the next call starts, and verifies, a new one).
func (r *Client) checked(resp *runnerproto.Response, check func(*runnerproto.Response) error, err error) (*runnerproto.Response, error) {
	bad := checkErrorReply(resp)
	if bad == nil && resp.Error == "" {
		bad = check(resp)
	}
	if bad != nil {
		r.fail(bad)
		return nil, bad
	}
	return resp, err
}

// result is the error a checked reply stands for: its error text, when it is an error reply.
func result(resp *runnerproto.Response, err error) error {
	if err != nil {
		return err
	}
	if resp.Error != "" {
		return errors.New(resp.Error)
	}
	return nil
}

func (r *Client) send(req *runnerproto.Request) error {
	if r.sendOnLane(req) {
		return nil
	}
	return r.sendOnChannel(req)
}

// sendOnChannel writes req on the runner's channel.
func (r *Client) sendOnChannel(req *runnerproto.Request) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return runnerproto.WriteFrame(r.stdin, req)
}

// callDeadline bounds how long the host waits for the runner's reply to req. A runner that
// never answers (a hostile one, or one whose reply it cannot send) must not hang a review or a
// tool call: past the deadline the call fails and the connection is started again.
func callDeadline(req *runnerproto.Request) time.Duration {
	slack := replySlack
	switch {
	case req.Exec != nil:
		if req.Exec.TimeoutMillis > 0 {
			return time.Duration(req.Exec.TimeoutMillis)*time.Millisecond + slack
		}
		return 0 // no timeout asked: the caller's context bounds it
	case req.Scan != nil, req.CkptCreate != nil, req.CkptRestore != nil, req.CkptSeed != nil:
		return 10 * time.Minute // a 200k-file tree on an emulated guest
	default:
		return 5 * time.Minute
	}
}

// replySlack is how long after a command's own timeout its reply may still come (the runner
// kills the process group, then collects what it printed).
var replySlack = 30 * time.Second
