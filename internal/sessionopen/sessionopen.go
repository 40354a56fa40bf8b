// Package sessionopen opens what a command works on: a Lima instance, the store of its staged
// sessions on the host, a connection to its guest, and the staged session of a working
// directory. Commands take an Opener, so that a test can hand them a stand-in (an sshd on
// loopback for the guest, a temporary directory for the store). It is the one place a command
// looks a session up in the store (Find, Session, Lookup) and plans the opening or staging of
// one under its network policy (Plan: serve and shell); it is not the command line (what a
// command names is resolved by internal/command/cmdutil) and not staging itself (staging).
package sessionopen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Target is an instance, its session store, and (when it runs) a connection to its guest.
type Target struct {
	Instance *instance.Instance
	Store    staging.Store
	// Conn is the connection to the guest: nil when the instance is not running, unless
	// Options.ConnectStopped asked for one anyway.
	Conn *guest.Conn
	// ConnErr says why the instance is not running (nil when it runs).
	ConnErr error

	// newConn makes a connection like Conn with another guest identity (AgentConn).
	newConn func(*guest.Agent) *guest.Conn
	mu      sync.Mutex
	agents  map[string]*guest.Conn // by agent user
	retired []*guest.Conn          // replaced in agents by a plan's (planConn), closed with the Target
}

// Options say how Open connects to the guest.
type Options struct {
	// Logger receives the connection's diagnostics.
	Logger *slog.Logger
	// NoRunner and NoLoginShell are those of guest.Options.
	NoRunner     bool
	NoLoginShell bool
	// Handoff is that of guest.Options (serve).
	Handoff bool
	// ConnectStopped makes a connection to an instance that is not running too: it looks the
	// instance up again at every connect, so it works once the instance runs (serve).
	ConnectStopped bool
}

// Open finds the instance called name (instance.InspectCached: no limactl process when
// nothing its answer depends on changed) and makes its Target.
func Open(ctx context.Context, limactl, name string, opts Options) (*Target, error) {
	inst, err := instance.InspectCached(ctx, limactl, name)
	if err != nil {
		return nil, err
	}
	t := &Target{Instance: inst, Store: staging.StoreFor(inst.Dir), ConnErr: inst.CheckRunning()}
	if t.ConnErr == nil || opts.ConnectStopped {
		t.newConn = func(a *guest.Agent) *guest.Conn {
			// Each connection's first connect uses the instance found above; only a reconnect
			// looks it up again. (One resolver shared by all gave the instance to the first
			// connection only: each agent's connection of `status` ran `limactl list`, 2-3 s
			// each on a busy host.)
			resolve := instance.ResolverFrom(limactl, name, inst)
			return guest.New(resolve, guest.Options{Logger: opts.Logger, NoRunner: opts.NoRunner, NoLoginShell: opts.NoLoginShell, Handoff: opts.Handoff, Agent: a, LaneHost: netpolicy.RelayHost})
		}
		t.Conn = t.newConn(nil)
	}
	return t, nil
}

// AgentConn is the connection for a session that works as agent in the guest (under a network
// policy; nil: Conn itself), made on first use and closed with the Target. Nil when Conn is.
func (t *Target) AgentConn(a *guest.Agent) *guest.Conn { return t.agentConn(a, false) }

// planConn is AgentConn for a Plan's agent, which wins over a connection made earlier for the
// same user from the stored session (ConnFor: `shell` loads the session before it plans): that
// one holds the policy the session had, and its set-up would put that policy, not the one this
// command asked for, in place for the command (a narrower --network ran its first command
// under the wider policy before).
func (t *Target) planConn(a *guest.Agent) *guest.Conn { return t.agentConn(a, true) }

func (t *Target) agentConn(a *guest.Agent, plan bool) *guest.Conn {
	if a == nil || t.Conn == nil || t.newConn == nil {
		return t.Conn
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.agents[a.User]; ok {
		if !plan || c.Agent() == a {
			return c
		}
		t.retired = append(t.retired, c)
	}
	if t.agents == nil {
		t.agents = map[string]*guest.Conn{}
	}
	c := t.newConn(a)
	t.agents[a.User] = c
	return c
}

// ConnFor is the connection for the stored session st: its agent's under a network policy.
func (t *Target) ConnFor(st *staging.State) *guest.Conn {
	a := staging.AgentOf(st)
	if a != nil {
		a.Live = t.Store.LivePolicy(st.ID)
	}
	return t.AgentConn(a)
}

// ReadingConnFor is ConnFor for a command that only reads the session (status), and what to
// call once it is read. Under a network policy it is a connection of its own that starts only
// the runner as the agent user (guest.Agent.Observe: no set-up, no SFTP), from the root-owned
// runner Conn checked; done closes it, so that the ControlMaster's sessions (sshd allows 10 per
// connection) are not held by sessions already read. Without a policy it is Conn, and done does
// nothing.
func (t *Target) ReadingConnFor(st *staging.State) (c *guest.Conn, done func()) {
	a := staging.AgentOf(st)
	if a == nil || t.Conn == nil || t.newConn == nil {
		return t.Conn, func() {}
	}
	a.Observe = true
	a.Verified = t.Conn.VerifiedRunner // the runner it checked: each reading starts only that one
	c = t.newConn(a)
	return c, func() { c.Close() }
}

// ReadingSession is s for a command that reads the session before it may write to it (review:
// the changeset, --json, --patch, the terminal's first screen). Under a network policy it is s
// on ReadingConn's connection, which starts the runner as the agent without the agent's
// set-up (`net ensure`: 2.5-3 s of the 4.5 s a policy session's review took on an emulated
// guest) that only a write to the copy needs; s's own connection stays for the writes. It
// connects before it returns, and when the agent cannot be started that way (its user gone
// with a recreated guest, say) it is s itself: s's connection sets the agent up, or says why
// it cannot. Without a policy, or when s's connection is up already (`shell`'s review, on the
// Target its command ran with), it is s. done closes the reading connection.
func (t *Target) ReadingSession(ctx context.Context, s *staging.Session) (read *staging.Session, done func()) {
	if s.Connected() {
		return s, func() {}
	}
	c, done, reading := t.readingConn(ctx, s.State)
	if !reading {
		return s, done
	}
	return staging.Attach(c, s.Store(), s.State, s.Baseline), done
}

// ReadingConn is the connection ReadingSession reads the session of st through, for a command
// that reads the session and acts on the agent's processes but writes nothing to its copy
// (discard: the count of what is lost, the end of the background processes, then the agent
// released): under a network policy a runner started as the agent alone, connected; without
// one, or when that cannot start, the session's own connection (ConnFor). done closes it.
func (t *Target) ReadingConn(ctx context.Context, st *staging.State) (c *guest.Conn, done func()) {
	c, done, _ = t.readingConn(ctx, st)
	return c, done
}

// readingConn is ReadingConn, and whether it is a reading connection of its own.
func (t *Target) readingConn(ctx context.Context, st *staging.State) (*guest.Conn, func(), bool) {
	c, done := t.ReadingConnFor(st)
	if c == t.Conn {
		return t.ConnFor(st), done, false
	}
	if _, err := c.Setup(ctx); err != nil {
		done()
		return t.ConnFor(st), func() {}, false
	}
	return c, done, true
}

// ReadingSessions is ReadingSession for each of ss (a compare), their connections made at
// once: under a policy, each session's agent is another guest user, with a runner of its own.
// done closes them all.
func (t *Target) ReadingSessions(ctx context.Context, ss []*staging.Session) (read []*staging.Session, done func()) {
	read = make([]*staging.Session, len(ss))
	dones := make([]func(), len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			read[i], dones[i] = t.ReadingSession(ctx, s)
		}()
	}
	wg.Wait()
	return read, func() {
		for _, d := range dones {
			d()
		}
	}
}

// Close closes the connections, if there are any.
func (t *Target) Close() {
	if t.Conn != nil {
		t.Conn.Close()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.agents {
		c.Close()
	}
	for _, c := range t.retired {
		c.Close()
	}
}

// Session loads the staged session called session ("" for the unnamed one) of workdir (an
// absolute, symlink-free path: see internal/workdirpath) and attaches it to the connection.
// It does not look at the guest: an error says there is no session (and which sessions
// workdir has), or why the instance is not running.
func (t *Target) Session(workdir, session string) (*staging.Session, error) {
	st, base, err := t.Store.LoadSession(workdir, session)
	if errors.Is(err, staging.ErrNoSession) {
		return nil, t.noSession(workdir, session)
	}
	if err != nil {
		return nil, err
	}
	if t.Conn == nil {
		return nil, t.ConnErr
	}
	return staging.Attach(t.ConnFor(st), t.Store, st, base), nil
}

// noSession says that workdir has no session called session, how to make one, and which
// sessions it has (they are easily taken for each other).
func (t *Target) noSession(workdir, session string) error {
	name := t.Instance.Name
	msg := fmt.Sprintf("%s has no staged session in instance %q: an agent's `limactl mcp serve %s` run in that directory creates one", workdir, name, name)
	if session != "" {
		msg = fmt.Sprintf("%s has no staged session %q in instance %q: an agent's `limactl mcp serve%s %s` run in that directory creates one", workdir, session, name, staging.SessionFlag(session), name)
	}
	if others, err := t.Store.SessionsOf(workdir); err == nil && len(others) > 0 {
		labels := make([]string, len(others))
		for i, st := range others {
			labels[i] = staging.SessionLabel(st.Session)
		}
		msg += fmt.Sprintf("; its sessions there: %s (`limactl mcp status %s` lists them, --session NAME picks one)", strings.Join(labels, ", "), name)
	}
	return noSession{msg}
}

// Opener opens the Target of the instance called name.
type Opener func(ctx context.Context, name string) (*Target, error)

// HostOpener is the Opener of the commands that work on staged sessions from the host
// (review, status, sync, discard, shell): they only read and write files, so the guest runner
// starts without the user's login shell; the connection's warnings go to logOut.
func HostOpener(logOut io.Writer) Opener {
	return func(ctx context.Context, name string) (*Target, error) {
		limactl, err := instance.Limactl()
		if err != nil {
			return nil, err
		}
		level := slog.LevelWarn
		if os.Getenv("LIMACTL_MCP_DEBUG") == "1" {
			level = slog.LevelDebug // how the connection went, and how long each step took
		}
		log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
		return Open(ctx, limactl, name, Options{Logger: log, NoLoginShell: true})
	}
}

// OpenSession opens the instance called name with open, and the session called session ("" for
// the unnamed one) that the command verb (review, sync, discard), run in workdir, is about: workdir's own, or that of the staged
// project holding workdir (see Target.Find; the session's State.Workdir says which). The
// caller closes the Target. When the instance or the session is missing and workdir is staged
// in other instances, the error names them and the command to use (a project staged in
// "agent" reviewed with a plain `review`, which means "default").
func OpenSession(ctx context.Context, open Opener, verb, name, workdir, session string) (*Target, *staging.Session, error) {
	t, err := open(ctx, name)
	if err != nil {
		return nil, nil, stagedElsewhere(ctx, WithCommand(err, verb), verb, name, workdir, session)
	}
	found, err := t.Find(verb, workdir, session)
	if err != nil {
		t.Close()
		return nil, nil, err
	}
	s, err := t.Session(found, session)
	if err != nil {
		t.Close()
		return nil, nil, stagedElsewhere(ctx, err, verb, name, workdir, session)
	}
	return t, s, nil
}

// Elsewhere lists the instances, other than the one named, that hold the staged session called
// session of workdir or of a directory above it. A variable, so that tests can stand in for
// limactl.
var Elsewhere = func(ctx context.Context, name, workdir, session string) []string {
	limactl, err := instance.Limactl()
	if err != nil {
		return nil
	}
	all, err := instance.List(ctx, limactl)
	if err != nil {
		return nil
	}
	var out []string
	for _, inst := range all {
		if inst.Name == name || inst.Dir == "" {
			continue
		}
		if found, err := nearestStaged(staging.StoreFor(inst.Dir), workdir, session); err == nil && found != "" {
			out = append(out, inst.Name)
		}
	}
	return out
}

// stagedElsewhere adds to err, when the instance or the session is missing, the instances
// that do hold workdir's session.
func stagedElsewhere(ctx context.Context, err error, verb, name, workdir, session string) error {
	if !errors.Is(err, instance.ErrNotExist) && !errors.Is(err, staging.ErrNoSession) {
		return err
	}
	others := Elsewhere(ctx, name, workdir, session)
	flag := staging.SessionFlag(session)
	switch len(others) {
	case 0:
		return err
	case 1:
		return fmt.Errorf("%s is staged in instance %q, not %q: name it, as in `limactl mcp %s%s %s` (%w)", workdir, others[0], name, verb, flag, others[0], err)
	}
	return fmt.Errorf("%s is staged in instances %s, not %q: name one, as in `limactl mcp %s%s %s` (%w)", workdir, strings.Join(quoteAll(others), ", "), name, verb, flag, others[0], err)
}

func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return q
}

// noSession is the error for a working directory without a session: its words, and
// staging.ErrNoSession for errors.Is.
type noSession struct{ msg string }

func (e noSession) Error() string { return e.msg }
func (e noSession) Unwrap() error { return staging.ErrNoSession }

// WithCommand adds to the error of a misspelled instance the command that does what verb
// (review, status, ...) meant on the instance it is close to.
func WithCommand(err error, verb string) error {
	var ne *instance.NotExistError
	if !errors.As(err, &ne) || ne.Near == "" {
		return err
	}
	return fmt.Errorf("%w; to %s %q: `limactl mcp %s %s`", err, verb, ne.Near, verb, ne.Near)
}
