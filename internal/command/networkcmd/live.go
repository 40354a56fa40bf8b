package networkcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/projectpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// LiveOptions are what `network INSTANCE show|allow|deny|set` depends on.
type LiveOptions struct {
	IO       *iostreams.IOStreams
	Instance string
	// Action is show, allow, deny or set; Args its arguments (hosts, or the one policy).
	Action string
	Args   []string
	// Workdir and Session are --workdir and --session: which session's policy.
	Workdir string
	Session string
	JSON    bool
	// Save is --save: the resulting policy is also kept as the project's policy on the host
	// (projectpolicy), which serve and shell use when no --network is given.
	Save bool

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// Actions are the live subcommands, in the order the help lists them.
var actions = []string{"show", "allow", "deny", "set", "once", "refuse"}

// checkArgs checks the action's arguments before anything is opened.
func (o *LiveOptions) checkArgs() error {
	switch o.Action {
	case "show":
		if len(o.Args) > 0 {
			return fmt.Errorf("network %s show takes no argument (got %q)", o.Instance, o.Args[0])
		}
		if o.Save {
			return fmt.Errorf("network %s show --save: --save keeps a changed policy (allow, deny, set); to keep the session's policy as it is, run: network %s set POLICY --save", o.Instance, o.Instance)
		}
	case "allow", "deny":
		if len(o.Args) == 0 {
			return fmt.Errorf("network %s %s: name at least one host (HOST, HOST:PORT, *.DOMAIN, an IP address or @PRESET)", o.Instance, o.Action)
		}
	case "set":
		if len(o.Args) != 1 {
			return fmt.Errorf("network %s set takes one policy (open, none or allow:NAME[,NAME...]), got %d arguments", o.Instance, len(o.Args))
		}
	case "once", "refuse":
		if len(o.Args) != 1 || (!netpolicy.CheckHeldID(o.Args[0]) && !secrets.CheckHeldID(o.Args[0])) {
			return fmt.Errorf("network %s %s takes the id of one held connection or request: 16 hex digits (%s and 16 for a request the relay holds), the \"id\" of a line with \"held\": true in limactl mcp watch %s --json (got %q)", o.Instance, o.Action, secrets.HeldIDPrefix, o.Instance, strings.Join(o.Args, " "))
		}
		if o.Save {
			return fmt.Errorf("network %s %s --save: %s decides on one held connection and changes no policy; to allow its host for good, run: network %s allow HOST:PORT --save", o.Instance, o.Action, o.Action, o.Instance)
		}
	default:
		return fmt.Errorf("network %s %q: what to do is one of %s", o.Instance, o.Action, strings.Join(actions, ", "))
	}
	return nil
}

// errIdentity says that a change between open and a policy cannot be made live.
func errIdentity(from, to, flagsHint string) error {
	return fmt.Errorf("the session goes from %s to %s: that changes the guest user the agent works as (under a policy, a user of its own; under open, the Lima user), which a running server cannot do. Restart the agent's MCP server with it: limactl mcp serve --network=%s%s (or limactl mcp configure --network=%s for the agent's configuration)",
		from, to, to, flagsHint, to)
}

// nextPolicy is the policy after action with args on a session whose policy is current (as the
// session spells it: presets kept). Its error names the argument that is wrong, or says why the
// change cannot be made live.
func nextPolicy(current, action string, args []string, flagsHint string) (string, error) {
	cur, err := netpolicy.Parse(current)
	if err != nil {
		return "", fmt.Errorf("the session's recorded policy %q does not parse: %w (set one with: network INSTANCE set POLICY)", current, err)
	}
	switch action {
	case "set":
		next, err := netpolicy.Parse(args[0])
		if err != nil {
			return "", err
		}
		if cur.Restricted() != next.Restricted() {
			return "", errIdentity(cur.String(), next.String(), flagsHint)
		}
		return next.String(), nil
	case "allow":
		if !cur.Restricted() {
			return "", fmt.Errorf("the session's policy is open: every host is reachable already. To put it under a policy, %w", errIdentity("open", "allow:"+strings.Join(args, ","), flagsHint))
		}
		entries := cur.Entries()
		for _, a := range args {
			p, err := netpolicy.Parse("allow:" + a)
			if err != nil {
				return "", fmt.Errorf("allow %q: %w", a, err)
			}
			entries = append(entries, p.Entries()...)
		}
		next, err := netpolicy.Parse("allow:" + strings.Join(entries, ","))
		if err != nil {
			return "", err
		}
		return next.String(), nil
	case "deny":
		if !cur.Restricted() {
			return "", fmt.Errorf("the session's policy is open: nothing can be denied without a policy. %w", errIdentity("open", "none", flagsHint))
		}
		entries := cur.Entries()
		for _, a := range args {
			p, err := netpolicy.Parse("allow:" + a)
			if err != nil {
				return "", fmt.Errorf("deny %q: %w", a, err)
			}
			gone := p.Entries()[0]
			if i := slices.Index(entries, gone); i >= 0 {
				entries = slices.Delete(entries, i, i+1)
				continue
			}
			if err := coveredBy(cur, gone); err != nil {
				return "", fmt.Errorf("deny %q: %w", a, err)
			}
		}
		if len(entries) == 0 {
			return "none", nil
		}
		next, err := netpolicy.Parse("allow:" + strings.Join(entries, ","))
		if err != nil {
			return "", err
		}
		return next.String(), nil
	}
	return "", fmt.Errorf("unknown action %q", action)
}

// coveredBy says which entry of p still allows entry (not an entry itself, so deny cannot take
// it away alone) and the policy to set instead; nil when nothing allows it (denied already).
func coveredBy(p netpolicy.Policy, entry string) error {
	if strings.HasPrefix(entry, "@") || strings.HasPrefix(entry, "*.") {
		return nil // a preset or wildcard that is not an entry: nothing to take away
	}
	host, port := netpolicy.SplitEntry(entry)
	if !p.AllowsPort(host, port) && !(port == 0 && p.AllowsSomePort(host)) {
		return nil
	}
	var by []string
	for _, e := range p.Entries() {
		one, err := netpolicy.Parse("allow:" + e)
		if err == nil && (one.AllowsPort(host, port) || port == 0 && one.AllowsSomePort(host)) {
			by = append(by, e)
		}
	}
	spelled := p.Expanded().Entries()
	spelled = slices.DeleteFunc(spelled, func(e string) bool { return e == entry || e == host })
	suggestion := "none"
	if len(spelled) > 0 {
		suggestion = "allow:" + strings.Join(spelled, ",")
	}
	return fmt.Errorf("it is allowed by %s, not by an entry of its own: deny takes away entries only. Set the policy without it instead, presets spelled out: network INSTANCE set %s",
		strings.Join(by, ", "), suggestion)
}

// liveResult is what the command did, for --json and the text output.
type liveResult struct {
	Instance string `json:"instance"`
	Workdir  string `json:"workdir"`
	Session  string `json:"session,omitempty"`
	// Previous and Policy are the session's policy before and after (the same for show).
	Previous string `json:"previous"`
	Policy   string `json:"policy"`
	// Hosts are the policy's hosts with presets spelled out (what the guest's proxy allows).
	Hosts []string `json:"hosts,omitempty"`
	// Applied says the guest took the change now (false: the instance is not running; it is
	// put in place when the session next connects).
	Applied bool `json:"applied"`
	// Network is the record of what the agent did (show, when the instance runs).
	Network *staging.NetworkReport `json:"network,omitempty"`
	// ProjectPolicy is the project's policy file on the host (projectpolicy), when it has one:
	// serve and shell start under it when no --network is given. Saved says --save wrote it.
	ProjectPolicy *projectPolicy `json:"project_policy,omitempty"`
	// Held is the decision on a held connection (once, refuse).
	Held *heldDecision `json:"held,omitempty"`
}

// heldDecision is what once or refuse decided: netpolicy.DecisionOnce or DecisionDeny.
type heldDecision struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
}

// projectPolicy is the project's policy file in the output.
type projectPolicy struct {
	File    string `json:"file"`
	Network string `json:"network"`
	Saved   bool   `json:"saved"`
}

// RunLive shows or changes the network policy of a session, at once.
func RunLive(ctx context.Context, opts *LiveOptions) error {
	if err := opts.checkArgs(); err != nil {
		return err
	}
	ios := opts.IO
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "network", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	t, workdir, st, err := ref.OpenState(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	if st == nil && opts.Save && opts.Action == "set" {
		// No session yet: the project's policy alone, for its first serve or shell.
		pol, err := netpolicy.Parse(opts.Args[0])
		if err != nil {
			return err
		}
		res := &liveResult{Instance: t.Instance.Name, Workdir: workdir, Session: ref.Session, Previous: "", Policy: pol.String()}
		if err := saveProjectPolicy(res, workdir, pol.String()); err != nil {
			return err
		}
		return printLive(opts, res)
	}
	if st == nil {
		_, err := t.Session(workdir, ref.Session) // says there is none, and which there are
		if err == nil {
			err = errors.New("no staged session")
		}
		return err
	}
	res := &liveResult{Instance: t.Instance.Name, Workdir: st.Workdir, Session: st.Session, Previous: staging.NetworkOf(st)}
	if opts.Action == "once" || opts.Action == "refuse" {
		return decideHeld(ctx, opts, t, st, res)
	}
	if opts.Action == "show" {
		res.Policy = res.Previous
		res.Applied = t.Conn != nil
		readProjectPolicy(res, st.Workdir)
		if t.Conn != nil && res.Policy != staging.OpenNetwork {
			if sess, err := t.Session(workdir, ref.Session); err == nil {
				res.Network = sess.NetworkReport(ctx, t.Conn)
			}
		}
		return printLive(opts, res)
	}
	if err := change(ctx, t, st, opts.Action, opts.Args, opts.Save, ref.Flag(), res); err != nil {
		return err
	}
	return printLive(opts, res)
}

// decideHeld lets one connection the guest's proxy holds, or one request the session's relay
// holds (its id starts with secrets.HeldIDPrefix), through (once) or refuses it now (refuse),
// as watch's o and d do: for a script that reads watch --json (whose reads keep them held).
// The policy is not changed.
func decideHeld(ctx context.Context, opts *LiveOptions, t *sessionopen.Target, st *staging.State, res *liveResult) error {
	if res.Previous == staging.OpenNetwork {
		return fmt.Errorf("the session's policy is open: no connection is held (they are held under a policy, while limactl mcp watch runs)")
	}
	decision := netpolicy.DecisionOnce
	if opts.Action == "refuse" {
		decision = netpolicy.DecisionDeny
	}
	if secrets.CheckHeldID(opts.Args[0]) {
		// A request the session's relay holds on the host: no guest in the way.
		if err := secrets.DecideHeld(t.Store.SessionDir(st.ID), opts.Args[0], decision); err != nil {
			return err
		}
	} else if err := DecideHeld(ctx, t, staging.AgentUser(st.ID), opts.Args[0], decision); err != nil {
		return err
	}
	res.Policy, res.Applied = res.Previous, true
	res.Held = &heldDecision{ID: opts.Args[0], Decision: decision}
	return printLive(opts, res)
}

// Change makes action (allow, deny or set) with args on the running session st of t at once,
// as `network INSTANCE allow|deny|set` does: recorded with the session under its lock, put in
// place in the guest when the instance runs (else at the session's next connect), and, with
// save, kept as the project's policy. flagsHint is the --workdir/--session flags that name the
// session, for the restart an error may suggest. It returns the policy before and after and
// whether the guest took it now. `watch` allows a blocked destination through it.
func Change(ctx context.Context, t *sessionopen.Target, st *staging.State, action string, args []string, save bool, flagsHint string) (previous, policy string, applied bool, err error) {
	res := &liveResult{Instance: t.Instance.Name, Workdir: st.Workdir, Session: st.Session, Previous: staging.NetworkOf(st)}
	if err := change(ctx, t, st, action, args, save, flagsHint, res); err != nil {
		return "", "", false, err
	}
	return res.Previous, res.Policy, res.Applied, nil
}

// change is Change, filling res.
func change(ctx context.Context, t *sessionopen.Target, st *staging.State, action string, args []string, save bool, flagsHint string, res *liveResult) error {
	user := staging.AgentUser(st.ID)
	held := ""
	old, err := t.Store.ChangeNetwork(st.ID, func(old *staging.State) (string, error) {
		held = staging.NetworkOf(old) // read under the session's lock
		return nextPolicy(held, action, args, flagsHint)
	}, func(network string) error {
		res.Policy = network
		if t.Conn == nil || network == held {
			return nil
		}
		if _, err := t.Conn.SetAgentPolicy(ctx, user, staging.GuestPolicy(network)); err != nil {
			return err
		}
		res.Applied = true
		return nil
	})
	if err != nil {
		return err
	}
	res.Previous = staging.NetworkOf(old)
	if res.Policy == res.Previous {
		res.Applied = t.Conn != nil
	}
	if save {
		if err := saveProjectPolicy(res, st.Workdir, res.Policy); err != nil {
			return fmt.Errorf("the session's policy is %s now, but %w", res.Policy, err)
		}
	} else {
		readProjectPolicy(res, st.Workdir)
	}
	return nil
}

// saveProjectPolicy keeps network as the project's policy on the host.
func saveProjectPolicy(res *liveResult, workdir, network string) error {
	path, err := projectpolicy.Save(workdir, network)
	if err != nil {
		return err
	}
	res.ProjectPolicy = &projectPolicy{File: path, Network: network, Saved: true}
	return nil
}

// readProjectPolicy notes the project's policy file, when it has one (an unreadable one is
// said in place of its policy).
func readProjectPolicy(res *liveResult, workdir string) {
	f, path, ok, err := projectpolicy.Load(workdir)
	switch {
	case err != nil:
		res.ProjectPolicy = &projectPolicy{File: path, Network: "unreadable: " + err.Error()}
	case ok:
		res.ProjectPolicy = &projectPolicy{File: path, Network: f.Network}
	}
}

func printLive(opts *LiveOptions, res *liveResult) error {
	if p, err := netpolicy.Parse(res.Policy); err == nil && p.Mode() == netpolicy.ModeAllow {
		res.Hosts = p.Hosts()
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	w := opts.IO.Out
	which := res.Workdir
	if res.Session != "" {
		which += " [session " + res.Session + "]"
	}
	fmt.Fprintf(w, "%s (instance %s)\n", which, res.Instance)
	switch {
	case res.Held != nil && res.Held.Decision == netpolicy.DecisionOnce:
		fmt.Fprintf(w, "  held:    %s %s let through, that one only; the policy is unchanged: %s\n", heldNoun(res.Held.ID), res.Held.ID, res.Policy)
	case res.Held != nil:
		fmt.Fprintf(w, "  held:    %s %s refused now; the policy is unchanged: %s\n", heldNoun(res.Held.ID), res.Held.ID, res.Policy)
	case opts.Action == "show":
		fmt.Fprintf(w, "  policy:  %s\n", res.Policy)
	case res.Policy == res.Previous:
		fmt.Fprintf(w, "  policy:  %s (unchanged)\n", res.Policy)
	case res.Applied:
		fmt.Fprintf(w, "  policy:  %s (was %s): in force now, from the agent's next connection; no restart\n", res.Policy, res.Previous)
	default:
		fmt.Fprintf(w, "  policy:  %s (was %s): recorded; the instance is not running, so it is put in place when the session next connects\n", res.Policy, res.Previous)
	}
	if len(res.Hosts) > 0 && strings.Contains(res.Policy, "@") {
		fmt.Fprintf(w, "  hosts:   %s\n", strings.Join(res.Hosts, ", "))
	}
	if pp := res.ProjectPolicy; pp != nil {
		if pp.Saved {
			fmt.Fprintf(w, "  project: %s saved in %s: serve and shell start under it when no --network is given\n", pp.Network, pp.File)
		} else {
			fmt.Fprintf(w, "  project: %s (%s: serve and shell start under it when no --network is given; --save changes it)\n", pp.Network, pp.File)
		}
	}
	if res.Network != nil {
		fmt.Fprintf(w, "  record:  %s\n", termsafe.String(strings.TrimPrefix(res.Network.Line(), "network policy "))) // may quote the guest
		changes := res.Network.Changes
		if len(changes) > 5 {
			fmt.Fprintf(w, "  changes: %d earlier ones not shown (--json lists up to %d)\n", len(changes)-5, netpolicy.MaxRecordChanges)
			changes = changes[len(changes)-5:]
		}
		for _, c := range changes {
			from := c.From
			if from == "" {
				from = "(set up)"
			}
			fmt.Fprintf(w, "  changed: %s  %s -> %s\n", c.Time.Local().Format("2006-01-02 15:04:05"), termsafe.String(from), termsafe.String(c.To))
		}
	}
	return nil
}

// heldNoun is what the held id names: a request the relay holds, or a connection the guest's
// proxy holds.
func heldNoun(id string) string {
	if secrets.CheckHeldID(id) {
		return "request"
	}
	return "connection"
}
