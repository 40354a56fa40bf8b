package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// SecretFlags are --secret (repeatable) and --agent-secrets (docs/secrets.md).
type SecretFlags struct {
	Specs []string
	Agent bool
	// Logins are --login (shell only: an agent in the VM logged in with its subscription).
	Logins []string
}

// Any says whether a secret was asked for.
func (f SecretFlags) Any() bool { return len(f.Specs) > 0 || f.Agent || len(f.Logins) > 0 }

// Args are the flags again, for a command line (configure writes them into the agent's
// config: specs, never a value).
func (f SecretFlags) Args() []string {
	var args []string
	for _, s := range f.Specs {
		args = append(args, "--secret="+s)
	}
	if f.Agent {
		args = append(args, "--agent-secrets")
	}
	for _, l := range f.Logins {
		args = append(args, "--login="+l)
	}
	return args
}

// AddSecretFlags adds --secret and --agent-secrets to cmd.
func AddSecretFlags(cmd *cobra.Command, f *SecretFlags) {
	cmd.Flags().StringArrayVar(&f.Specs, "secret", nil, "A secret the agent may use but never read: `NAME[@HOST,...][=env:VAR|cmd:COMMAND|file:PATH]`, read on the host; the guest gets a placeholder, which the relay on the host replaces in requests to the bound hosts (repeatable; docs/secrets.md; under --network none refused)")
	cmd.Flags().BoolVar(&f.Agent, "agent-secrets", false, "Pass the known agents' API keys that are set on the host as secrets (--agent-env's keys, never entering the VM)")
}

// AddLoginFlag adds --login to cmd (shell: the agent runs in the VM).
func AddLoginFlag(cmd *cobra.Command, f *SecretFlags) {
	cmd.Flags().StringArrayVar(&f.Logins, "login", nil, "An agent's subscription login to use in the VM, its tokens kept on the host: `AGENT[=PATH]` (codex: its ChatGPT login, ~/.codex/auth.json); the guest gets the file with placeholders, the relay puts the tokens in and keeps a refresh's new ones in the host's file (repeatable; docs/secrets.md)")
}

// ResolveSecrets parses the flags and reads every value on the host (before the VM is
// touched: a value missing is an error then). Nil when none was asked for.
func ResolveSecrets(ctx context.Context, f SecretFlags, lookup func(string) (string, bool)) (*secrets.Set, error) {
	if !f.Any() {
		return nil, nil
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	specs, err := secrets.ParseSpecs(f.Specs, f.Agent, lookup)
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 && f.Agent && len(f.Logins) == 0 {
		return nil, fmt.Errorf("--agent-secrets: none of %s is set on the host", strings.Join(secrets.AgentSecretNames, ", "))
	}
	var logins []*secrets.Login
	seen := map[string]bool{}
	for _, s := range f.Logins {
		l, err := secrets.ParseLogin(s, lookup)
		if err != nil {
			return nil, err
		}
		if seen[l.Kind.Agent] {
			return nil, fmt.Errorf("--login %s given twice", l.Kind.Agent)
		}
		seen[l.Kind.Agent] = true
		logins = append(logins, l)
	}
	set, err := secrets.Resolve(ctx, &secrets.Reader{LookupEnv: lookup}, specs)
	if err != nil {
		return nil, err
	}
	return set.WithLogins(logins...), nil
}

// WireSecrets gives the planned session's agent the secrets of set: the session CA (kept in
// the session's host state directory), the relay, and the bound hosts added to its allowlist.
// It must run before the session's connection is first used. Under open the session's
// connection carries the proxy of the bound hosts instead; under none it refuses with the fix. w gets a line saying which hosts joined the allowlist.
//
// The relay also reads the HTTPS of the hosts that the agent's method and path rules only name
// (netpolicy.Policy.RuleTargets: `github.com:ro`), to check each request against the rules:
// such a policy wires the session CA and the relay without any secret.
func WireSecrets(t *sessionopen.Target, plan *sessionopen.Plan, set *secrets.Set, w io.Writer) (*secrets.Session, error) {
	pol, err := netpolicy.Parse(plan.Net.Network)
	if err != nil {
		return nil, err
	}
	ruleTargets, err := agentRuleTargets(plan, set)
	if err != nil {
		return nil, err
	}
	if set == nil && len(ruleTargets) == 0 {
		return nil, nil
	}
	if pol.Mode() == netpolicy.ModeNone {
		return nil, errors.New("--secret: under --network none no host may be reached, the bound ones included: use --network allow:HOST,... (the bound hosts are added to it) or open")
	}
	a := plan.Net.Agent
	if pol.Mode() != netpolicy.ModeOpen && a == nil {
		return nil, errors.New("--secret: the session has no agent user")
	}
	dir := t.Store.SessionDir(staging.SessionIDOf(plan.Workdir, plan.Session))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s, err := secrets.OpenSession(dir, set, ruleTargets)
	if err != nil {
		return nil, err
	}
	if pol.Mode() == netpolicy.ModeOpen {
		// No agent user and no guest proxy: the session's connection carries a proxy of its
		// own for the bound hosts (guest.Conn.UseOpenSecrets).
		c := plan.Conn()
		if c == nil {
			return nil, errors.New("--secret: the instance is not running")
		}
		if err := c.UseOpenSecrets(&guest.AgentSecrets{Setup: s.Setup(), Serve: s.Serve}); err != nil {
			return nil, err
		}
		if w != nil {
			fmt.Fprintf(w, "limactl-mcp: secrets %s: the guest holds placeholders; under network open, the agent's HTTPS goes through this command's proxy (HTTPS_PROXY), which puts the values into requests to %s on the host and passes every other host through from the guest\n",
				strings.Join(set.Names(), ", "), strings.Join(set.Hosts(), ", "))
		}
		return s, nil
	}
	guestPol, err := netpolicy.Parse(a.Policy)
	if err != nil {
		return nil, err
	}
	var added []string
	for _, h := range s.BoundNames() {
		if !guestPol.Allows(h) {
			added = append(added, h)
		}
	}
	agents := []*guest.Agent{a}
	// The session's connection may have been made (not dialled) for the stored session's
	// agent already (Target.Session): it gets them too.
	if c := plan.Conn(); c != nil && c.Agent() != nil && c.Agent() != a {
		agents = append(agents, c.Agent())
	}
	// Their bound hosts join the allowlist of whichever policy each set-up puts in place
	// (guest.Agent.CurrentPolicy).
	for _, ag := range agents {
		ag.Secrets = &guest.AgentSecrets{Setup: s.Setup(), Serve: s.Serve, ServeRuled: s.ServeRuled, Held: s.Held}
	}
	if len(ruleTargets) > 0 && w != nil {
		fmt.Fprintf(w, "limactl-mcp: network rules: the relay on the host reads the HTTPS of %s (the guest trusts this session's CA for it) and lets through only the requests the rules allow\n",
			strings.Join(ruleTargets, ", "))
	}
	if set == nil {
		return s, nil
	}
	if len(added) > 0 && w != nil {
		fmt.Fprintf(w, "limactl-mcp: the secrets' bound hosts join the allowlist for this run: %s\n", strings.Join(added, ", "))
	}
	if w != nil {
		fmt.Fprintf(w, "limactl-mcp: secrets %s: the guest holds placeholders; the relay on the host puts the values into requests to %s\n",
			strings.Join(set.Names(), ", "), strings.Join(set.Hosts(), ", "))
	}
	return s, nil
}

// agentRuleTargets are the rule targets of the planned agent's policy (netpolicy.Policy
// .RuleTargets), the secrets' bound hosts counted as the plain entries they become.
func agentRuleTargets(plan *sessionopen.Plan, set *secrets.Set) ([]string, error) {
	a := plan.Net.Agent
	if a == nil {
		return nil, nil
	}
	p, err := netpolicy.Parse(a.Policy)
	if err != nil {
		return nil, err
	}
	if set != nil {
		p = p.WithHosts(set.BoundNames())
	}
	return p.RuleTargets(), nil
}
