package staging

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// A session's network policy (State.Network) is the person's choice, made on the host
// (`serve --network`, `shell --network`) and remembered with the session: "" or "open" is
// the guest user's own network, as without limactl-mcp; any other policy puts the agent's
// commands and tools under a guest user of the session's own (AgentUser), whose egress root
// filters in the guest (internal/netpolicy/enforce).

// OpenNetwork is the policy of a session that has none.
const OpenNetwork = "open"

// AgentUser is the guest user a session's agent acts as under a network policy.
func AgentUser(id string) string { return "lmcp-" + id }

// AgentHome is the guest home directory of the agent user of session id (internal/netpolicy/enforce
// makes it; a new session under a policy is placed there before the user exists).
func AgentHome(id string) string { return path.Join(netpolicy.AgentHomeBase, AgentUser(id)) }

// NetworkOf is the policy a State holds, "open" when it holds none.
func NetworkOf(st *State) string {
	if st == nil || st.Network == "" {
		return OpenNetwork
	}
	return st.Network
}

// markerRel is the session marker's path relative to the guest user's home.
func markerRel(id string) string { return path.Join(".cache", "limactl-mcp", "sessions", id) }

// AgentFor is the guest identity a session of workdir works under with network policy
// network (nil for "open"): its own user, the staged copy at guestPath handed to that user,
// and the session's marker carried over from the Lima user when the session was open before.
func AgentFor(id, network, guestPath string) *guest.Agent {
	if network == "" || network == OpenNetwork {
		return nil
	}
	return &guest.Agent{User: AgentUser(id), Policy: guestPolicy(network), Own: guestPath, Carry: []string{markerRel(id)}}
}

// guestPolicy is network as the guest is given it: its presets (@go) replaced by their hosts,
// so that the runner enforces host names only. The session keeps the person's spelling (status
// shows allow:@go,example.com). A policy that does not parse goes as it is: the runner refuses it.
func guestPolicy(network string) string {
	pol, err := netpolicy.Parse(network)
	if err != nil {
		return network
	}
	return pol.Expanded().String()
}

// AgentOf is AgentFor of a stored session.
func AgentOf(st *State) *guest.Agent {
	return AgentFor(st.ID, NetworkOf(st), st.GuestPath)
}

// NetworkPlan is how a command that opens (or stages) the session of a working directory
// works under a network policy: the policy chosen, who the session works as in the guest,
// and whether an earlier policy's agent user must first hand the copy back.
type NetworkPlan struct {
	// Network is the policy the session will hold ("open" for none).
	Network string
	// Previous is the policy the session held ("open" for a new session).
	Previous string
	// Agent is the guest identity to connect as (nil: the Lima user).
	Agent *guest.Agent
	// GuestPath is where a new session under a policy is staged ("" otherwise: the usual).
	GuestPath string
	// Release names the agent user that must hand the copy back to the Lima user first (a
	// session going from a policy to "open"), "" when none.
	Release string
}

// PlanNetwork decides how the session called session ("" for the unnamed one) of workdir
// works: under requested (as `--network` spells it, already checked; "" keeps what the session
// holds), with st the stored session (nil when there is none, or when it is being staged
// afresh).
func PlanNetwork(workdir, session string, st *State, requested string) (*NetworkPlan, error) {
	id := SessionIDOf(workdir, session)
	if requested != "" {
		pol, err := netpolicy.Parse(requested)
		if err != nil {
			return nil, fmt.Errorf("--network: %w", err)
		}
		requested = pol.String()
	}
	p := &NetworkPlan{Previous: NetworkOf(st), Network: requested}
	if p.Network == "" {
		p.Network = p.Previous
	}
	if p.Network == OpenNetwork {
		if p.Previous != OpenNetwork {
			p.Release = AgentUser(id)
		}
		return p, nil
	}
	guestPath := ""
	if st != nil {
		guestPath = st.GuestPath
		if p.Previous == OpenNetwork && strings.Contains(guestPath, "/"+RelocatedDir+"/") && !tree.Within(AgentHome(id), guestPath) {
			return nil, fmt.Errorf("the session of %s is staged at %s, inside the guest user's home, which the agent's own user under network policy %s cannot reach: review or discard it (limactl mcp review%s / discard%s), then start again with --network",
				workdir, guestPath, p.Network, SessionFlag(session), SessionFlag(session))
		}
	} else {
		// In the agent user's home: a named session's relocated copy too (the Lima user's
		// home, where an open session's relocated copy goes, is closed to the agent's user).
		guestPath, _ = SessionGuestPath(workdir, session, AgentHome(id), id)
		p.GuestPath = guestPath
	}
	p.Agent = AgentFor(id, p.Network, guestPath)
	return p, nil
}

// SetNetwork records the session's network policy.
func (s *Session) SetNetwork(network string) error {
	if network == OpenNetwork {
		network = ""
	}
	if s.State.Network == network {
		return nil
	}
	s.State.Network = network
	return s.store.Save(s.State, nil)
}

// ReleaseAgent hands the copy of the stored session st back from its agent user to the Lima
// user (conn is the Lima user's connection) and ends that user's network policy.
func ReleaseAgent(ctx context.Context, conn *guest.Conn, st *State) error {
	return conn.ReleaseAgent(ctx, AgentUser(st.ID), st.GuestPath, []string{markerRel(st.ID)})
}

// AgentSetup sets the session's agent user up in the guest (connecting as it; again after a VM
// restart) and returns what the guest reported; nil when the session has no network policy.
func (s *Session) AgentSetup(ctx context.Context) (*guest.AgentSetup, error) {
	return s.conn.Setup(ctx)
}

// Connected says whether the session's connection is up (its agent set up, under a policy),
// without connecting.
func (s *Session) Connected() bool { return s.conn.Connected() }

// GuestPolicy is network as the guest is given it (presets replaced by their hosts).
func GuestPolicy(network string) string { return guestPolicy(network) }

// loadState reads the state of session id without its baseline.
func (s Store) loadState(id string) (*State, error) {
	data, err := os.ReadFile(s.statePath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("session state %s is corrupt: %w", s.statePath(id), err)
	}
	return &st, nil
}

// LivePolicy is guest.Agent.Live for session id: the guest's spelling of the policy the store
// holds for it now ("" when it cannot be read), read at every set-up of the agent, so that a
// reconnect puts a live change (ChangeNetwork) in place rather than the policy the connection
// was made with.
func (s Store) LivePolicy(id string) func() string {
	return func() string {
		st, err := s.loadState(id)
		if err != nil {
			return ""
		}
		return guestPolicy(NetworkOf(st))
	}
}

// ChangeNetwork records a new network policy for the stored session id, under the session's
// lock, with apply run first (the guest's change: the record changes only when it succeeded;
// nil: none). It returns the state as it was before. `limactl mcp network` is its caller.
func (s Store) ChangeNetwork(id string, change func(old *State) (string, error), apply func(network string) error) (*State, error) {
	unlock, err := s.Lock(id, 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := s.loadState(id)
	if err != nil {
		return nil, err
	}
	old := *st
	network, err := change(&old)
	if err != nil {
		return &old, err
	}
	// Recorded first, so that a server setting its agent up meanwhile (it reads this record)
	// puts the new policy in place, not the old one over the change; put back if the guest
	// refuses the change.
	rec := network
	if rec == OpenNetwork {
		rec = ""
	}
	prev := st.Network
	st.Network = rec
	if err := s.Save(st, nil); err != nil {
		return &old, err
	}
	if apply != nil {
		if err := apply(network); err != nil {
			st.Network = prev
			if serr := s.Save(st, nil); serr != nil {
				return &old, fmt.Errorf("%w (and putting the recorded policy back: %v)", err, serr)
			}
			return &old, err
		}
	}
	return &old, nil
}
