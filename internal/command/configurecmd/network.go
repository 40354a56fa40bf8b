package configurecmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/huh"

	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/projectpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

// The answers of the policy question that are not a policy.
const (
	keepAnswer  = "keep"  // the existing session's policy: no --network written
	otherAnswer = "other" // typed in
)

// networkChoice is the policy question's outcome: the policy to write (opts.Network), or none.
type networkChoice struct {
	// Proposed is the allow policy of the presets detected in the project ("" for none).
	Proposed string
	Found    []netpolicy.Detection
	// Existing is the policy of the project's staged session, when it has one ("" otherwise).
	Existing string
}

// chooseNetwork settles opts.Network when --network was not given: on a terminal, it asks which
// policy the agent should have, proposing the presets matching the project's files
// (netpolicy.DetectPresets); without one, the default is unchanged (the session's policy, else
// open) and a note says what the project seems to need. --network always wins.
func chooseNetwork(ctx context.Context, opts *Options) error {
	if opts.Network != "" {
		if _, err := netpolicy.Parse(opts.Network); err != nil {
			return fmt.Errorf("--network: %w", err)
		}
		if !opts.User {
			opts.projectNetwork = opts.Network
		}
		return nil
	}
	c := networkChoice{}
	if !opts.User {
		if dir, err := workdirpath.Resolve(opts.Workdir); err == nil {
			c.Found = netpolicy.DetectPresets(dir)
			c.Proposed = netpolicy.ProposedPolicy(c.Found)
			c.Existing = existingPolicy(ctx, opts, dir)
		}
	}
	ios := opts.IO
	if !opts.Interactive() {
		fmt.Fprintln(ios.Out, nonInteractiveNote(c))
		return nil
	}
	ask := opts.askNetwork
	if ask == nil {
		ask = askWithHuh
	}
	answer, err := ask(opts, c)
	if err != nil {
		return err
	}
	switch {
	case answer == keepAnswer:
	case opts.User:
		opts.Network = answer // no project: in the server's command
	default:
		// Kept on the host, outside the project: the agent's configuration may be a file of
		// the project (.mcp.json), which the agent can propose to change through review.
		opts.projectNetwork = answer
	}
	return nil
}

// saveProjectNetwork keeps the chosen policy as the project's policy on the host
// (projectpolicy), which serve and shell use when no --network is given.
func saveProjectNetwork(opts *Options) error {
	if opts.projectNetwork == "" {
		return nil
	}
	dir, err := workdirpath.Resolve(opts.Workdir)
	if err != nil {
		return err
	}
	if opts.DryRun {
		path, err := projectpolicy.Path(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "network: would keep %s as the project's policy in %s (dry run: nothing written)\n", opts.projectNetwork, path)
		return nil
	}
	path, err := projectpolicy.Save(dir, opts.projectNetwork)
	if err != nil {
		return fmt.Errorf("the agent is configured, but its network policy was not kept: %w (run: limactl mcp network %s set %s --save)", err, opts.Instance, opts.projectNetwork)
	}
	fmt.Fprintf(opts.IO.Out, "network: %s kept as the project's policy in %s, outside the project (serve and shell use it when no --network is given; change it with limactl mcp network %s set POLICY --save)\n", opts.projectNetwork, path, opts.Instance)
	return nil
}

// Interactive says whether configure may ask questions (a terminal on both ends, and not a dry run).
func (o *Options) Interactive() bool {
	return o.IO.IsStdinTTY() && o.IO.IsStdoutTTY() && !o.DryRun
}

// nonInteractiveNote says what the agent's network is when configure cannot ask.
func nonInteractiveNote(c networkChoice) string {
	var b strings.Builder
	switch {
	case c.Existing != "":
		fmt.Fprintf(&b, "network: no --network given: the project's session keeps its policy, %s.", c.Existing)
	default:
		b.WriteString("network: no --network given (and no question without a terminal, or in a dry run): the agent's network stays open, the default (docs/network.md).")
	}
	if c.Proposed != "" {
		fmt.Fprintf(&b, " The project looks like it needs %s (%s): pass --network=%s to limit the agent to that.", c.Proposed, foundFiles(c.Found), c.Proposed)
	} else if c.Existing == "" {
		b.WriteString(" Pass --network=none, or --network=allow:@PRESET,HOST... (limactl mcp network presets), to limit it.")
	}
	return b.String()
}

func foundFiles(found []netpolicy.Detection) string {
	var parts []string
	for _, d := range found {
		parts = append(parts, d.File+" → @"+d.Preset)
	}
	return strings.Join(parts, ", ")
}

// existingPolicy is the policy of the project's staged session in the instance ("" when it has
// none, or the instance cannot be looked at: the question then offers no "keep").
func existingPolicy(ctx context.Context, opts *Options, dir string) string {
	limactl, err := instance.Limactl()
	if err != nil {
		return ""
	}
	inst, err := instance.InspectCached(ctx, limactl, opts.Instance)
	if err != nil || inst.Dir == "" {
		return ""
	}
	session, _ := staging.ParseSessionName(opts.Session)
	st, _, err := staging.StoreFor(inst.Dir).LoadSession(dir, session)
	if err != nil {
		return ""
	}
	return staging.NetworkOf(st)
}

// networkOptions are the question's answers, the proposed one first (the default).
func networkOptions(c networkChoice) []huh.Option[string] {
	var opts []huh.Option[string]
	if c.Existing != "" {
		opts = append(opts, huh.NewOption("keep the session's policy: "+c.Existing, keepAnswer))
	}
	if c.Proposed != "" {
		opts = append(opts, huh.NewOption(c.Proposed+"  (proposed: "+foundFiles(c.Found)+")", c.Proposed))
	}
	opts = append(opts,
		huh.NewOption("none  (no network: tasks that need no download)", "none"),
		huh.NewOption("open  (the guest's network, as without limactl-mcp)", "open"),
		huh.NewOption("another policy: type it", otherAnswer),
	)
	return opts
}

// askWithHuh asks the policy question in the terminal.
func askWithHuh(opts *Options, c networkChoice) (string, error) {
	ios := opts.IO
	answer := ""
	desc := "Under a policy the agent works as a user of its own, and its commands reach only what the policy allows. Change it later, at once, with: limactl mcp network " + opts.Instance + " allow HOST"
	if c.Proposed == "" && c.Existing == "" {
		desc = "No package manager's file was found at the project's top, so no preset is proposed. " + desc
	}
	sel := huh.NewSelect[string]().Title("Which network may the agent's commands reach?").Description(desc).
		Options(networkOptions(c)...).Value(&answer)
	if err := runForm(ios, huh.NewGroup(sel)); err != nil {
		return "", err
	}
	if answer != otherAnswer {
		return answer, nil
	}
	typed := ""
	in := huh.NewInput().Title("Network policy").Description("none, open, or allow:NAME[,NAME...]: hosts, HOST:PORT, *.DOMAIN, IP addresses, @PRESET (limactl mcp network presets)").
		Placeholder("allow:@go,example.com:443").Value(&typed).Validate(func(s string) error {
		_, err := netpolicy.Parse(strings.TrimSpace(s))
		return err
	})
	if err := runForm(ios, huh.NewGroup(in)); err != nil {
		return "", err
	}
	p, _ := netpolicy.Parse(strings.TrimSpace(typed))
	return p.String(), nil
}

// runForm runs one group of questions on the terminal (the raw stream: the form draws itself;
// it shows no guest text). Ctrl-C or Esc ends configure with nothing written.
func runForm(ios *iostreams.IOStreams, g *huh.Group) error {
	err := huh.NewForm(g).WithInput(ios.In).WithOutput(ios.RawErrOut()).WithShowHelp(true).Run()
	if errors.Is(err, huh.ErrUserAborted) {
		return exitcode.With(exitcode.Interrupted, errors.New("interrupted at the network question: nothing was written"))
	}
	return err
}
