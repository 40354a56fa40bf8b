package sessionopen

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/projectpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Lookup is the stored state of the session called session ("" for the unnamed one) of
// workdir exactly (no directory above it: see Find), nil when there is none. With Find and
// Session it is how a command looks a session up: no command reads the store itself.
func (t *Target) Lookup(workdir, session string) (*staging.State, error) {
	st, _, err := t.Store.LoadSession(workdir, session)
	if errors.Is(err, staging.ErrNoSession) {
		return nil, nil
	}
	return st, err
}

// Plan is how serve and shell open, or stage, the session of a working directory under its
// network policy: the one place that turns a stored session and --network into a connection
// and a staging. Review, sync, restore and discard never stage: they use OpenSession.
type Plan struct {
	// Workdir and Session name the session (Session "" for the unnamed one).
	Workdir, Session string
	// Stored is the session's stored state when it was planned (nil: not staged yet).
	Stored *staging.State
	// Net is the network plan: the policy, the agent, where a new copy goes, the release.
	Net *staging.NetworkPlan
	// PolicyFile is the project's policy file on the host when the policy came from it (no
	// --network given: projectpolicy), "" otherwise.
	PolicyFile string

	t *Target
	// recorded: this process has recorded its own policy as the session's (RecordNetwork);
	// from then on the record's policy is the agent's, a live change included.
	recorded *atomic.Bool
}

// PlanSession plans the session called session of workdir, stored as stored (nil when there is
// none: see Lookup), under requested (--network as given; "" is the project's policy file on
// the host when it has one, as if given as --network, else the session's policy).
func (t *Target) PlanSession(workdir, session string, stored *staging.State, requested string) (*Plan, error) {
	policyFile := ""
	if requested == "" {
		f, path, ok, err := projectpolicy.Load(workdir)
		if err != nil {
			return nil, fmt.Errorf("%w (pass --network to start anyway under another policy)", err)
		}
		if ok {
			requested, policyFile = f.Network, path
		}
	}
	recorded := &atomic.Bool{}
	net, err := staging.PlanNetwork(workdir, session, stored, requested)
	if err != nil {
		return nil, err
	}
	if net.Agent != nil {
		// A reconnect (a VM restart, a dropped link) sets the agent up under the policy the
		// session holds then: a live change (limactl mcp network) is kept.
		// The record counts only once this process has recorded its own policy there
		// (RecordNetwork, at its first staging), or a set-up has read it holding that policy:
		// before that it is the previous server's, and --network wins over it.
		live, own := t.Store.LivePolicy(staging.SessionIDOf(workdir, session)), net.Agent.Policy
		net.Agent.Live = func() string {
			p := live()
			if !recorded.Load() {
				if p != own {
					return ""
				}
				recorded.Store(true)
			}
			return p
		}
	}
	return &Plan{Workdir: workdir, Session: session, Stored: stored, Net: net, PolicyFile: policyFile, t: t, recorded: recorded}, nil
}

// RecordNetwork records the plan's policy as the session's, once staged (sess), and from then
// on the agent's set-ups take the record's policy, so that a live change made after it is kept
// even when no set-up read the record while it held this process's own policy (a session's
// first connect comes before its first staging, and a person may allow a host live before the
// next one: a reconnect, or the hand-over from the ControlMaster to serve's own connection).
func (p *Plan) RecordNetwork(sess *staging.Session) error {
	if err := sess.SetNetwork(p.Net.Network); err != nil {
		return err
	}
	p.recorded.Store(true)
	return nil
}

// Changes says that a stored session's network policy changes (from Net.Previous to
// Net.Network): worth a line to the person.
func (p *Plan) Changes() bool {
	return p.Net.Network != p.Net.Previous && p.Stored != nil
}

// Conn is the session's connection: its agent user's under a network policy (made on first
// use, closed with the Target), else the Lima user's. Nil when the Target has no connection.
func (p *Plan) Conn() *guest.Conn {
	return p.t.planConn(p.Net.Agent)
}

// Release makes the earlier policy's agent user hand the copy back to the Lima user, when the
// session goes back to "open" (Net.Release), through the Lima user's connection; done once.
// The state is read again: serve releases at its first staging, not when it planned.
func (p *Plan) Release(ctx context.Context) error {
	if p.Net.Release == "" {
		return nil
	}
	st, _, err := p.t.Store.LoadSession(p.Workdir, p.Session)
	if err != nil {
		return err
	}
	if err := staging.ReleaseAgent(ctx, p.t.Conn, st); err != nil {
		return err
	}
	p.Net.Release = ""
	return nil
}

// OpenOrStage resumes the session, or stages it (staging.Open), on the session's connection:
// a pending Release first, the copy of a new session where the plan puts it. opts gives the
// rest (Instance, Select, Fresh, Progress, Logger); its Workdir, Session and GuestPath are
// the plan's. Recording the policy (Session.SetNetwork) is the caller's, when it is settled.
func (p *Plan) OpenOrStage(ctx context.Context, opts staging.OpenOptions) (*staging.Session, staging.Outcome, error) {
	if err := p.Release(ctx); err != nil {
		return nil, "", err
	}
	opts.Workdir, opts.Session, opts.GuestPath = p.Workdir, p.Session, p.Net.GuestPath
	return staging.Open(ctx, p.Conn(), p.t.Store, opts)
}
