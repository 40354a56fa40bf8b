// Package configurecmd is what `limactl mcp configure` does: it adds "limactl mcp serve" to an
// AI agent's MCP config, then makes sure the instance is a sandbox (it exists or --create
// makes it, it runs, it has no host mounts).
package configurecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/agentconfig"
	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

// Options are the parsed command line of configure.
type Options struct {
	IO *iostreams.IOStreams
	// Agent is the agent to configure (see agentconfig.Agents).
	Agent               string
	Instance            string
	User                bool
	DryRun              bool
	DisableBuiltinTools bool
	Name                string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	Create  bool
	// Network is --network: written into the server's command (serve --network=POLICY).
	Network string
	// Secrets are --secret and --agent-secrets: written into the server's command as specs
	// (never a value: serve reads the values on the host when it starts).
	Secrets cmdutil.SecretFlags
	// Session is --session: written into the server's command (serve --session=NAME), so that
	// this agent works on a staged copy of its own (docs/sessions.md).
	Session  string
	Template string
	// List shows which agents are configured (Agent: only that one) and writes nothing.
	List bool

	// projectNetwork is the policy to keep as the project's on the host (projectpolicy) once
	// the agent is configured: the question's answer (then not in the agent's configuration,
	// which may be a file of the project), or --network.
	projectNetwork string

	// askNetwork asks the policy question (nil: askWithHuh); tests give one.
	askNetwork func(*Options, networkChoice) (string, error)
}

// Run checks what can be checked before anything is written (the project is not the home
// directory, the instance exists or --create may make it), configures the agent, then makes
// sure the instance is a sandbox.
func Run(ctx context.Context, opts *Options) error {
	if opts.List {
		return list(opts)
	}
	if _, err := staging.ParseSessionName(opts.Session); err != nil {
		return err // before the instance is looked up: a typo is said first
	}
	if err := refuseHome(opts); err != nil {
		return err
	}
	if err := checkInstanceFirst(ctx, opts); err != nil {
		return err
	}
	if err := chooseNetwork(ctx, opts); err != nil {
		return err
	}
	if err := configure(opts); err != nil {
		return err
	}
	if err := saveProjectNetwork(opts); err != nil {
		return err
	}
	return checkSandbox(ctx, opts)
}

// refuseHome refuses the home directory as a project: the agent's staged copy would be all of
// it, and some agents read their user-wide settings there (Claude Code's ~/.claude).
func refuseHome(opts *Options) error {
	if opts.User {
		return nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	workdir, err := workdirpath.Resolve(opts.Workdir)
	if err != nil {
		return nil // configure says what is wrong with it
	}
	if h, err := workdirpath.Resolve(home); err != nil || h != workdir {
		return nil
	}
	return fmt.Errorf("refusing to configure your home directory %s as a project: the agent's staged copy would be all of it, and %s's project settings there are its user-wide ones. Run this in the project's directory (or pass --workdir DIR); to add the server for every project, pass --user", workdir, opts.Agent)
}

// checkInstanceFirst refuses, before anything is written (and in a dry run), an instance with
// host mounts, and one that does not exist when --create is not given: a typo would otherwise leave the agent configured
// for an instance nobody has. It says nothing when limactl is missing (checkSandbox notes it).
func checkInstanceFirst(ctx context.Context, opts *Options) error {
	limactl, err := instance.Limactl()
	if err != nil {
		return nil
	}
	inst, err := instance.Inspect(ctx, limactl, opts.Instance)
	if errors.Is(err, instance.ErrNotExist) && !opts.Create {
		return fmt.Errorf("nothing was written: %w; or pass --create to make it as a sandbox: `limactl mcp configure %s --instance %s --create`", err, opts.Agent, opts.Instance)
	}
	if err == nil {
		if m := inst.Mounts(); len(m) > 0 {
			// Not a warning followed by "Ready": the agent's tools would work on the live
			// mount, and nothing would ever be reviewable.
			return fmt.Errorf("nothing was written: instance %q mounts host directories (%s), so the agent's tools would change your files directly and nothing would be reviewable. Make a sandbox instance without mounts for the agent: `limactl mcp configure %s --instance %s-sandbox --create`",
				opts.Instance, strings.Join(m, ", "), opts.Agent, opts.Instance)
		}
	}
	return nil
}

// checkSandbox makes sure the configured instance is a sandbox: it exists (or --create makes
// it), it runs, and it has no host mounts.
func checkSandbox(ctx context.Context, opts *Options) error {
	ios := opts.IO
	limactl, err := instance.Limactl()
	if err != nil {
		fmt.Fprintf(ios.ErrOut, "note: %v; the agent needs Lima's limactl to run its tools\n", err)
		return nil
	}
	if opts.DryRun {
		if _, err := instance.Inspect(ctx, limactl, opts.Instance); errors.Is(err, instance.ErrNotExist) {
			fmt.Fprintf(ios.Out, "note: instance %q does not exist; without --dry-run, --create would make it (`%s`)\n", opts.Instance, instance.CreateCommand(opts.Instance, opts.Template))
		}
		return nil
	}
	if opts.Create {
		fmt.Fprintf(ios.ErrOut, "Checking instance %q (creating or starting it can take a few minutes)...\n", opts.Instance)
	}
	warnings, err := instance.EnsureSandbox(ctx, limactl, opts.Instance, instance.SandboxOptions{Create: opts.Create, Template: opts.Template, Progress: ios.ErrOut})
	for _, w := range warnings {
		fmt.Fprintf(ios.Out, "warning: %s\n", w)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "Ready: start the agent in %s; then review its changes with `limactl mcp review %s`.\n", opts.workdirOrCwd(), opts.Instance)
	return nil
}

// workdirOrCwd is the project directory as the person named it.
func (o *Options) workdirOrCwd() string {
	if o.Workdir != "" {
		return o.Workdir
	}
	wd, _ := os.Getwd()
	return wd
}

// configure writes (or with --dry-run shows) the agent's config.
func configure(opts *Options) error {
	ios := opts.IO
	workdir, err := workdirpath.Abs(opts.Workdir)
	if err != nil {
		return err
	}
	planOpts := agentconfig.Options{
		Agent:               opts.Agent,
		Instance:            opts.Instance,
		Workdir:             workdir,
		User:                opts.User,
		DisableBuiltinTools: opts.DisableBuiltinTools,
		ServerName:          opts.Name,
	}
	session, err := staging.ParseSessionName(opts.Session)
	if err != nil {
		return err
	}
	if opts.Secrets.Any() {
		network := opts.Network
		if network == "" {
			network = opts.projectNetwork // the question's answer, kept on the host
		}
		if err := checkSecretSpecs(opts.Secrets, network); err != nil {
			return err
		}
	}
	if opts.Network != "" || session != "" || opts.Secrets.Any() {
		planOpts.Command = []string{"limactl", "mcp", "serve", opts.Instance}
		if opts.Network != "" {
			planOpts.Command = append(planOpts.Command, "--network="+opts.Network)
		}
		if session != "" {
			planOpts.Command = append(planOpts.Command, "--session="+session)
		}
		planOpts.Command = append(planOpts.Command, opts.Secrets.Args()...)
	}
	changes, err := agentconfig.Plan(planOpts)
	if err != nil {
		return err
	}
	// A run without --disable-builtin-tools after one with it leaves the agent's tools off
	// (configure only adds): say so, not that they "stay available".
	alreadyOff := false
	if !opts.DisableBuiltinTools {
		if st, err := agentconfig.StatusOf(planOpts); err == nil && st.BuiltinsOff && st.CanDisable {
			alreadyOff = true
		}
	}
	var notes []string
	if alreadyOff {
		notes = append(notes, "The agent's own file and shell tools are already off here, from an earlier --disable-builtin-tools; configure never turns them back on.")
	}
	for _, c := range changes {
		for _, n := range c.Notes {
			if alreadyOff && strings.Contains(n, "stay available;") && strings.Contains(n, "--disable-builtin-tools") {
				continue
			}
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
		switch {
		case !c.Changed():
			fmt.Fprintf(ios.Out, "already configured: %s\n", c.Path)
		case opts.DryRun:
			fmt.Fprintf(ios.Out, "would %s %s: %s\n%s", verb(c), c.Path, c.Summary, c.Diff())
		default:
			if err := agentconfig.Apply([]agentconfig.Change{c}); err != nil {
				return err
			}
			fmt.Fprintf(ios.Out, "%sd %s: %s\n", verb(c), c.Path, c.Summary)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(ios.Out, "note: %s\n", n)
	}
	if opts.DryRun {
		fmt.Fprintln(ios.Out, "dry run: nothing was written")
	}
	return nil
}

// verb is what applying c does to its file: "create" or "update".
func verb(c agentconfig.Change) string {
	if c.Creates() {
		return "create"
	}
	return "update"
}

// checkSecretSpecs checks --secret specs as serve will read them (their values are not read
// here: serve reads them when it starts) and that the network policy can carry them.
func checkSecretSpecs(f cmdutil.SecretFlags, network string) error {
	if _, err := secrets.ParseSpecs(f.Specs, false, nil); err != nil {
		return err
	}
	if network == "none" {
		return fmt.Errorf("--secret: under --network none no host may be reached, the bound ones included: use --network allow:HOST,... (the bound hosts are added to it) or open")
	}
	return nil
}
