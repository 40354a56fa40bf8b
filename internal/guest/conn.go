// Package guest is the one connection limactl-mcp keeps to a Lima instance, the façade the
// rest of the program calls (Conn: files, commands, searches, background processes,
// checkpoints, the agent user of a network policy), reconnecting on the next call after the
// guest restarts. Below it: guest/sshlink, the transport (a connection of our own, or the
// instance's OpenSSH ControlMaster: two implementations of sshlink.Transport), and
// guest/runnerclient, the typed and checked client of the guest runner. Beside it:
// guest/terminal, a person's commands on their own terminal (`shell`).
//
// Requests and results are the runner protocol's own types (internal/runnerproto), which
// callers import openly: this package re-exports none of them (no aliases). Its own types are
// host-side ones (ExecRequest, FileReader, WaitError, Agent, Options).
package guest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/pkg/sftp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
)

// Options tune a Conn.
type Options struct {
	// Logger receives diagnostics (never stdout: in `serve`, stdout carries MCP).
	Logger *slog.Logger
	// NoRunner runs every command in its own SSH session through a login shell, as
	// `limactl shell` does, instead of through the guest runner (slower; for tests and for
	// guests the runner cannot run on).
	NoRunner bool
	// NoLoginShell gives the runner's commands no login environment: for commands
	// that only read and write files (review, status), not for running the agent's commands.
	NoLoginShell bool
	// KeepaliveInterval is how often a dead connection is looked for (default 10s).
	KeepaliveInterval time.Duration
	// Handoff, for a long-lived process (serve): once a connection through the instance's
	// ControlMaster is up, make a connection of our own in the background and move to it,
	// retiring the master's sessions once they are idle. The master serves the first calls at
	// once, and a server that lives for hours does not hold sessions of the master's connection
	// (the guest's sshd allows 10 per connection: MaxSessions), which `limactl shell` needs.
	Handoff bool
	// Agent, when set, makes everything the connection does in the guest run as the agent's
	// own unprivileged user under a network policy (agent.go). It needs the runner.
	Agent *Agent
	// LaneHost is the name the guest reaches this host's loopback by (Lima's
	// host.lima.internal), where the runner of a connection without Agent opens its fast lane
	// (lane.go); "": no fast lane, the runner's channel carries everything.
	LaneHost string
}

// Conn is one connection to the guest, made on first use and made again after it breaks.
type Conn struct {
	resolve sshlink.Resolver
	opts    Options
	log     *slog.Logger

	mu     sync.Mutex
	cur    *link
	closed bool
	// openSecrets are a session's secrets under open (UseOpenSecrets; nil: none).
	openSecrets *AgentSecrets

	// stop is closed by Close, which must not wait for a connect in progress (under mu):
	// it ends that connect instead.
	stop     chan struct{}
	stopOnce sync.Once
}

// link is everything that lives and dies with one connection to the guest.
type link struct {
	target *sshlink.Target
	t      sshlink.Transport // a connection of our own, or the instance's ControlMaster
	sftp   *sftp.Client
	// sftpDone, when not nil, is closed when the SFTP session ends (through the master: a
	// process of its own).
	sftpDone <-chan struct{}
	ops      backend // through the runner, or without it when it is off or could not start
	home     string
	done     chan struct{} // closed when the connection is gone
	// agent is Options.Agent; setup what the guest reported setting it up (nil without).
	agent   *Agent
	setup   *AgentSetup
	closers []func() // what else ends with the link (the agent's SFTP process)
	// relayPort, relayKey: the agent's relay's port on the host and its key (relay.go; nil:
	// none).
	relayPort net.Listener
	relayKey  string
	// envFile is the environment file of the secrets under open (opensecrets.go; "": none).
	envFile string
	// systemRunner is the path of the root-owned runner, "" when the runner is the user's copy.
	systemRunner string
	log          *slog.Logger
}

// New returns a Conn that connects on first use.
func New(resolve sshlink.Resolver, opts Options) *Conn {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.KeepaliveInterval == 0 {
		opts.KeepaliveInterval = 10 * time.Second
	}
	return &Conn{resolve: resolve, opts: opts, log: opts.Logger, stop: make(chan struct{})}
}

// ErrClosed is returned after Close.
var ErrClosed = errors.New("the connection to the guest is closed")

// get returns the live link, connecting if there is none.
func (c *Conn) get(ctx context.Context) (*link, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.cur != nil {
		select {
		case <-c.cur.done:
			c.cur = nil
		default:
			return c.cur, nil
		}
	}
	// A connect takes seconds on a slow guest: Close ends it rather than waiting for it.
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-dctx.Done():
		}
	}()
	l, err := c.dial(dctx)
	if err != nil {
		select {
		case <-c.stop:
			return nil, ErrClosed
		default:
		}
		return nil, err
	}
	c.cur = l
	if l.t.Via() == sshlink.ViaControlMaster && c.opts.Handoff {
		go c.handoff(l)
	}
	return l, nil
}

// handoffDelay is how long a connection through the master serves before handoff starts
// making one of our own.
var handoffDelay = 5 * time.Second

// handoff makes a connection of our own while old (through the master) serves, moves to it,
// and retires old once no runner call is pending on it and a grace period has passed (an SFTP
// client handed out before the move may still be in use). If the connection of our own cannot
// be made, old goes on serving.
func (c *Conn) handoff(old *link) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-old.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	// Not at once: a handshake costs the guest's CPU seconds (an emulated one), which the first
	// calls, and a client that only probes the server and leaves, should not pay.
	select {
	case <-time.After(handoffDelay):
	case <-ctx.Done():
		return
	}
	t0 := time.Now()
	l, err := c.dialDirect(ctx, old.target)
	if err != nil {
		c.log.Debug("staying on the ControlMaster: no connection of our own", "reason", err)
		return
	}
	if _, err := l.ops.runner(); err != nil {
		c.log.Debug("staying on the ControlMaster: the runner did not start on the connection of our own")
		l.close()
		return
	}
	c.mu.Lock()
	if c.closed || c.cur != old {
		c.mu.Unlock()
		l.close()
		return
	}
	c.cur = l
	c.mu.Unlock()
	c.log.Debug("connected to the guest", "via", l.t.Via(), "handoff", true, "took", time.Since(t0).Round(time.Millisecond))
	cancel()
	c.retire(old)
}

// offMaster moves the Conn from l, a link through the master that refused a new session (why),
// to a connection of its own, and returns the link to use. Calls in flight on l finish there;
// l is retired once idle.
func (c *Conn) offMaster(ctx context.Context, l *link, why error) (*link, error) {
	c.mu.Lock()
	cur := c.cur
	c.mu.Unlock()
	if cur != nil && cur != l {
		return cur, nil // moved already (another call, or the handoff)
	}
	t0 := time.Now()
	nl, err := c.dialDirect(ctx, l.target)
	if err != nil {
		return nil, fmt.Errorf("%v, and a connection of our own failed: %w", why, err)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		nl.close()
		return nil, ErrClosed
	}
	if c.cur != nil && c.cur != l {
		cur := c.cur
		c.mu.Unlock()
		nl.close()
		return cur, nil
	}
	c.cur = nl
	c.mu.Unlock()
	c.log.Debug("connected to the guest", "via", nl.t.Via(), "reason", why, "took", time.Since(t0).Round(time.Millisecond))
	go c.retire(l)
	return nl, nil
}

// retire closes old, a link no longer current, once no runner call is pending on it and a
// grace period has passed (an SFTP client handed out before the move may still be in use).
func (c *Conn) retire(old *link) {
	const grace = 30 * time.Second
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	since := time.Now()
	for {
		select {
		case <-old.done:
			return
		case <-c.stop:
			old.close()
			return
		case <-tick.C:
		}
		if time.Since(since) >= grace && old.idle() {
			c.log.Debug("the ControlMaster's sessions retired")
			old.close()
			return
		}
	}
}

// drop forgets l if it is still the current link, so that the next call reconnects.
func (c *Conn) drop(l *link, why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == l {
		c.log.Warn("dropping the connection to the guest; the next call reconnects", "reason", why)
		c.cur = nil
		l.close()
	}
}

func (c *Conn) dial(ctx context.Context) (*link, error) {
	start := time.Now()
	if a := c.opts.Agent; a != nil {
		if err := a.check(); err != nil {
			return nil, err
		}
		if c.opts.NoRunner {
			return nil, fmt.Errorf("network policy %s: the agent's commands need the guest runner (not --no-runner)", a.Policy)
		}
	}
	if c.openSecrets != nil && c.opts.NoRunner {
		return nil, errors.New("secrets: the agent's commands need the guest runner (not --no-runner), which starts them with the secrets' environment")
	}
	t, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	c.log.Debug("instance found", "took", time.Since(start).Round(time.Millisecond))
	// Through the instance's ControlMaster when one answers; a connection of our own when
	// there is none or it fails in any way (gone, refused, a VM restarted under it): correct
	// first, then fast. Without the runner every command would be a session of its own, which
	// the direct connection serves as `limactl shell` does.
	// An agent with secrets needs the relay's forward, which only a connection of our own
	// carries (sshlink.ErrNoForward says why).
	if t.ControlPath != "" && !c.opts.NoRunner && (c.opts.Agent == nil || c.opts.Agent.Secrets == nil) && c.openSecrets == nil {
		m, err := sshlink.NewMaster(t)
		if err == nil {
			var l *link
			if l, err = c.dialMaster(ctx, t, m); err == nil {
				c.log.Debug("connected to the guest", "via", l.t.Via(), "took", time.Since(start).Round(time.Millisecond))
				return l, nil
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if re := (refusedError{}); errors.As(err, &re) {
				return nil, re.error
			}
		}
		c.log.Debug("not using the instance's ssh ControlMaster; connecting directly", "reason", err)
	}
	l, err := c.dialDirect(ctx, t)
	if err == nil {
		c.log.Debug("connected to the guest", "via", l.t.Via(), "took", time.Since(start).Round(time.Millisecond))
	}
	return l, err
}

// newLink is a link over the transport tr to t.
func (c *Conn) newLink(t *sshlink.Target, tr sshlink.Transport) *link {
	return &link{target: t, t: tr, ops: sessionBackend{}, done: make(chan struct{}), agent: c.opts.Agent, log: c.log}
}

// watch closes l.done when the transport is gone or any of vital is closed (a nil one never is).
func (l *link) watch(vital ...<-chan struct{}) {
	for len(vital) < 2 {
		vital = append(vital, nil)
	}
	go func() {
		select {
		case <-l.t.Done():
		case <-vital[0]:
		case <-vital[1]:
		}
		close(l.done)
	}()
}

// dialMaster connects through the master m: SFTP and the runner, each in an ssh client
// process of its own. Any failure closes what was started and returns an error: the caller
// then connects directly.
func (c *Conn) dialMaster(ctx context.Context, t *sshlink.Target, m *sshlink.Master) (*link, error) {
	if l, ok, err := c.dialObserving(ctx, t, m); ok {
		return l, err
	}
	l := c.newLink(t, sshlink.NewMasterTransport(m))
	// SFTP calls and the runner's upload take no context: ending the processes ends them when
	// ctx ends (Close, or the caller giving up).
	abort := context.AfterFunc(ctx, l.t.Close)
	defer abort()
	login := !c.opts.NoLoginShell
	// The runner's shell starts while SFTP starts and the runner is checked; it execs the
	// runner only once told the path of the verified file. Not for an agent of its own: its
	// runner starts once the agent is set up (startRunner).
	var waiting *runnerclient.Waiting
	var err error
	if l.agent == nil {
		if waiting, err = runnerclient.StartWaiting(l.t, login); err != nil {
			l.t.Close()
			return nil, err
		}
	}
	t0 := time.Now()
	if l.sftp, l.sftpDone, err = l.t.SFTP(ctx); err != nil {
		waiting.Abandon()
		l.t.Close()
		return nil, err
	}
	c.log.Debug("sftp through the ControlMaster", "took", time.Since(t0).Round(time.Millisecond))
	// Every command goes through the runner here: without it, no link.
	r, err := c.setUp(ctx, l, login, waiting, true, "sftp through the ControlMaster")
	if err != nil {
		return nil, err
	}
	// The link is gone when either process is (SFTP's, the runner's): the master went away
	// (the VM stopped), or a side failed. The next call connects again.
	l.watch(l.sftpDone, r.Done())
	return l, nil
}

// dialDirect makes a connection of our own to the guest's sshd.
func (c *Conn) dialDirect(ctx context.Context, t *sshlink.Target) (*link, error) {
	d, err := sshlink.NewDirect(ctx, t)
	if err != nil {
		return nil, err
	}
	l := c.newLink(t, d)
	// sftp and the runner's start take no context: closing the connection ends them when ctx
	// ends (Close, or the caller giving up).
	abort := context.AfterFunc(ctx, l.t.Close)
	defer abort()
	l.watch()
	l.t.Keepalive(c.opts.KeepaliveInterval, func(err error) { c.drop(l, err) })
	if l.sftp, l.sftpDone, err = l.t.SFTP(ctx); err != nil {
		l.close()
		return nil, err
	}
	if c.opts.NoRunner {
		if l.home, err = l.sftp.Getwd(); err != nil {
			l.close()
			return nil, fmt.Errorf("sftp in instance %q: %w", t.Name, err)
		}
		return l, nil
	}
	if l.agent == nil && c.openSecrets != nil {
		if err := l.startOpenSecrets(ctx, c.openSecrets); err != nil {
			l.close()
			return nil, fmt.Errorf("the secrets' proxy (network open): %w", err)
		}
	}
	// Without the runner, commands go on one SSH session each (not an agent's: never the Lima
	// user's commands in its place, they would not be under the policy).
	if _, err := c.setUp(ctx, l, !c.opts.NoLoginShell, nil, l.agent != nil, fmt.Sprintf("sftp in instance %q", t.Name)); err != nil {
		return nil, err
	}
	return l, nil
}

// setUp starts the runner on l (SFTP up) and sets l's home directory, asked for while
// the runner is checked: the root-owned runner's path does not depend on it (a round trip less
// before the first answer). When the runner cannot start, l is closed and that is an error if
// required; else commands go on one SSH session each, and it says why that is slower.
func (c *Conn) setUp(ctx context.Context, l *link, login bool, waiting *runnerclient.Waiting, required bool, sftpWhat string) (*runnerclient.Client, error) {
	type homeResult struct {
		dir string
		err error
	}
	homec := make(chan homeResult, 1)
	sc := l.sftp
	go func() {
		dir, err := sc.Getwd()
		homec <- homeResult{dir, err}
	}()
	home := sync.OnceValues(func() (string, error) {
		r := <-homec
		if r.err != nil {
			return "", fmt.Errorf("%s: %w", sftpWhat, r.err)
		}
		return r.dir, nil
	})
	r, err := startRunner(ctx, l, c.log, login, waiting, home)
	switch {
	case err == nil:
		l.ops = runnerBackend{r}
		if l.agent == nil && c.opts.LaneHost != "" {
			go openLane(r, c.opts.LaneHost, c.log)
		}
	case required:
		l.close()
		return nil, err
	default:
		c.log.Warn("the guest runner could not start; falling back to one ssh session per command", "error", err)
	}
	h, err := home()
	if err != nil {
		l.close()
		return nil, err
	}
	if l.home == "" { // an agent's is its own user's (becomeAgent)
		l.home = h
	}
	return r, nil
}

func (l *link) close() {
	l.ops.close()
	for _, c := range l.closers {
		c()
	}
	// The transport first: the SFTP client's Close waits for its reader to see the end of
	// the stream, which would otherwise take a round trip to the guest (its sftp-server
	// seeing our end, then exiting).
	l.t.Close()
	if l.sftp != nil {
		_ = l.sftp.Close()
	}
}

// idle says whether no runner call is pending on l.
func (l *link) idle() bool { return l.ops.idle() }

// Connected says whether the connection is up now, without connecting and without waiting for
// a connect in progress (which holds mu for seconds: false then).
func (c *Conn) Connected() bool {
	if !c.mu.TryLock() {
		return false
	}
	defer c.mu.Unlock()
	if c.closed || c.cur == nil {
		return false
	}
	select {
	case <-c.cur.done:
		return false
	default:
		return true
	}
}

// Close closes the connection, ending a connect in progress; later calls fail with ErrClosed.
func (c *Conn) Close() error {
	c.stopOnce.Do(func() { close(c.stop) })
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.cur != nil {
		c.cur.close()
		c.cur = nil
	}
	return nil
}

// VerifiedRunner is the root-owned runner the connection checked when it connected (connecting
// if needed): "" when it has none (its runner is the user's copy) or cannot connect.
func (c *Conn) VerifiedRunner(ctx context.Context) string {
	l, err := c.get(ctx)
	if err != nil {
		return ""
	}
	return l.systemRunner
}

// SFTP returns the SFTP client of the live connection.
func (c *Conn) SFTP(ctx context.Context) (*sftp.Client, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	if l.sftp == nil {
		return nil, errObserveNoSFTP
	}
	return l.sftp, nil
}

// Home returns the guest user's home directory.
func (c *Conn) Home(ctx context.Context) (string, error) {
	l, err := c.get(ctx)
	if err != nil {
		return "", err
	}
	return l.home, nil
}

// Via says how the connection reaches the guest (connecting if needed).
func (c *Conn) Via(ctx context.Context) (sshlink.Via, error) {
	l, err := c.get(ctx)
	if err != nil {
		return "", err
	}
	return l.t.Via(), nil
}

// UsesRunner says whether commands go through the guest runner (connecting if needed).
func (c *Conn) UsesRunner(ctx context.Context) (bool, error) {
	l, err := c.get(ctx)
	if err != nil {
		return false, err
	}
	_, err = l.ops.runner()
	return err == nil, nil
}

// IsConnectionError says whether err means the connection itself broke (as opposed to an
// operation failing), so that the caller can report it as such.
func IsConnectionError(err error) bool {
	var oe *net.OpError
	return errors.Is(err, sshlink.ErrLinkDown) || errors.Is(err, runnerclient.ErrBadReply) || errors.As(err, &oe) || errors.Is(err, sftp.ErrSSHFxConnectionLost)
}
