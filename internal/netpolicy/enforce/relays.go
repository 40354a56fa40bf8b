package enforce

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// Several limactl-mcp processes may hold one session at once (`serve` for the agent on the
// host, `shell` for one inside the VM, each with the secrets and logins it was given): each
// listens at a relay socket of its own (netpolicy.RelaySocketName), and the user's policy file
// lists them, oldest first, with what each binds. A set-up keeps the relays of the others that
// still answer and adds its own last; the proxy hands a connection to the newest relay that
// binds its target and answers, and moves on to an older one when it does not (its process
// ended): one process ending, or setting up after another, takes nothing from the other.

// RelayEntry is one process's relay in a policy file.
type RelayEntry struct {
	// Name is netpolicy.SecretsSetup.Relay ("": the one socket of older builds).
	Name        string   `json:"name"`
	Hosts       []string `json:"hosts,omitempty"`
	RuleTargets []string `json:"rule_targets,omitempty"`
}

// maxRelays bounds the relays a policy file lists (the oldest go first beyond it).
const maxRelays = 16

// checkRelays checks a policy file's relays: names that make a socket name in the relay
// directory, each once, and hosts within the user's bound hosts and rule targets.
func (u UserPolicy) checkRelays() error {
	if len(u.Relays) > maxRelays {
		return fmt.Errorf("user %s: more than %d relays", u.User, maxRelays)
	}
	var seen []string
	for _, r := range u.Relays {
		if err := netpolicy.CheckRelayName(r.Name); err != nil {
			return fmt.Errorf("user %s: %w", u.User, err)
		}
		if slices.Contains(seen, r.Name) {
			return fmt.Errorf("user %s: relay %q listed twice", u.User, r.Name)
		}
		seen = append(seen, r.Name)
		for _, hp := range r.Hosts {
			if !slices.Contains(u.SecretHosts, hp) {
				return fmt.Errorf("user %s: relay %s binds %s, which is not a bound host", u.User, r.Name, hp)
			}
		}
		for _, hp := range r.RuleTargets {
			if !slices.Contains(u.RuleTargets, hp) {
				return fmt.Errorf("user %s: relay %s reads %s, which is not a rule target", u.User, r.Name, hp)
			}
		}
	}
	return nil
}

// relaysFor are the names of the relays that take target (a bound host:port, or a rule
// target when rule), newest first. A policy file of an older build lists none: its one relay
// takes every target.
func (u UserPolicy) relaysFor(target string, rule bool) []string {
	if len(u.Relays) == 0 {
		return []string{""}
	}
	var names []string
	for _, r := range slices.Backward(u.Relays) {
		list := r.Hosts
		if rule {
			list = r.RuleTargets
		}
		if slices.Contains(list, target) {
			names = append(names, r.Name)
		}
	}
	return names
}

// withRelays sets u's relays to relays and its bound hosts and rule targets to theirs.
func (u *UserPolicy) withRelays(relays []RelayEntry) {
	if len(relays) > maxRelays {
		relays = relays[len(relays)-maxRelays:]
	}
	u.Relays, u.SecretHosts, u.RuleTargets = relays, nil, nil
	for _, r := range relays {
		for _, hp := range r.Hosts {
			if !slices.Contains(u.SecretHosts, hp) {
				u.SecretHosts = append(u.SecretHosts, hp)
			}
		}
		for _, hp := range r.RuleTargets {
			if !slices.Contains(u.RuleTargets, hp) {
				u.RuleTargets = append(u.RuleTargets, hp)
			}
		}
	}
}

// keptRelays are the relays of up (a user's policy file) whose sockets still answer, but the
// one of own (the process setting up, again perhaps; nil: none); the socket of each other one
// is removed. The relay directory is the Lima user's (up.RelayUID), which no agent can enter.
func keptRelays(l Layout, up UserPolicy, own *netpolicy.SecretsSetup) []RelayEntry {
	relays := up.Relays
	if len(relays) == 0 && len(up.SecretHosts)+len(up.RuleTargets) > 0 {
		// An older build's file: its one relay.
		relays = []RelayEntry{{Hosts: up.SecretHosts, RuleTargets: up.RuleTargets}}
	}
	var kept []RelayEntry
	for _, r := range relays {
		if own != nil && r.Name == own.Relay {
			continue
		}
		if c, err := connectRelay(l, up.User, up.RelayUID, r.Name); err == nil {
			c.Close() // the relay takes a connection that ends before its line as a probe
			kept = append(kept, r)
			continue
		}
		_ = os.Remove(filepath.Join(l.secretsDir(up.User), netpolicy.RelaySocketName(r.Name)))
	}
	return kept
}
