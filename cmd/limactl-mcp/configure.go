package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/agentconfig"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

type configureOptions struct {
	Instance            string
	User                bool
	DryRun              bool
	DisableBuiltinTools bool
	Name                string
	Workdir             string
	Create              bool
	Template            string
}

func newConfigureCmd(ios *iostreams.IOStreams) *cobra.Command {
	opts := &configureOptions{}
	cmd := &cobra.Command{
		Use:   "configure AGENT",
		Short: "Configure an AI agent (claude, gemini, codex, cursor) to use \"limactl mcp serve\" for its tools",
		Long: `Configure an AI agent to get its file and shell tools from "limactl mcp serve INSTANCE".

AGENT is one of:
  claude   Claude Code: .mcp.json in the project (--user: ~/.claude.json)
  gemini   Gemini CLI: .gemini/settings.json (--user: ~/.gemini/settings.json)
  codex    Codex: .codex/config.toml (--user: ~/.codex/config.toml)
  cursor   Cursor: .cursor/mcp.json (--user: ~/.cursor/mcp.json)

The server is added to the file the agent already has: other servers and settings are kept as
they are, running the command again changes nothing, and a file that cannot be parsed is left
alone. --create makes the instance (without host mounts) if it does not exist, or starts it.
--disable-builtin-tools also turns off the agent's own file and shell tools where the
agent has a setting for it; the notes printed at the end say what stays on.`,
		Example: `  limactl mcp configure claude --instance agent --create
  limactl mcp configure gemini --instance dev --disable-builtin-tools
  limactl mcp configure codex --user --dry-run`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, a := range agentconfig.Agents() {
				names = append(names, cobra.CompletionWithDesc(a.Name, a.Title))
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := runConfigure(ios, args[0], opts); err != nil {
				return err
			}
			return checkSandbox(cmd.Context(), ios, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Instance, "instance", "default", "Lima instance the agent's tools run in")
	f.BoolVar(&opts.User, "user", false, "Configure the user's global config instead of the project's")
	f.BoolVar(&opts.DryRun, "dry-run", false, "Show the changes as a diff and write nothing")
	f.BoolVar(&opts.DisableBuiltinTools, "disable-builtin-tools", false, "Also turn off the agent's own file and shell tools, where it can")
	f.StringVar(&opts.Name, "name", "lima", "Name of the MCP server in the agent's config")
	f.StringVar(&opts.Workdir, "workdir", "", "Project directory (default: the current directory)")
	_ = cmd.MarkFlagDirname("workdir")
	f.BoolVar(&opts.Create, "create", false, "Create and start the instance (without host mounts) if it does not exist, start it if it is stopped")
	f.StringVar(&opts.Template, "template", instance.DefaultTemplate, "Template of an instance made by --create")
	return cmd
}

// checkSandbox makes sure the configured instance is a sandbox: it exists (or --create makes
// it), it runs, and it has no host mounts.
func checkSandbox(ctx context.Context, ios *iostreams.IOStreams, opts *configureOptions) error {
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

func (o *configureOptions) workdirOrCwd() string {
	if o.Workdir != "" {
		return o.Workdir
	}
	wd, _ := os.Getwd()
	return wd
}

func runConfigure(ios *iostreams.IOStreams, agent string, opts *configureOptions) error {
	workdir := opts.Workdir
	if workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		workdir = wd
	}
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return err
	}
	changes, err := agentconfig.Plan(agentconfig.Options{
		Agent:               agent,
		Instance:            opts.Instance,
		Workdir:             workdir,
		User:                opts.User,
		DisableBuiltinTools: opts.DisableBuiltinTools,
		ServerName:          opts.Name,
	})
	if err != nil {
		return err
	}
	var notes []string
	for _, c := range changes {
		for _, n := range c.Notes {
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
		switch {
		case !c.Changed():
			fmt.Fprintf(ios.Out, "already configured: %s\n", c.Path)
		case opts.DryRun:
			fmt.Fprintf(ios.Out, "would %s %s: %s\n%s", configureVerb(c), c.Path, c.Summary, c.Diff())
		default:
			if err := agentconfig.Apply([]agentconfig.Change{c}); err != nil {
				return err
			}
			fmt.Fprintf(ios.Out, "%sd %s: %s\n", configureVerb(c), c.Path, c.Summary)
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

// configureVerb is what applying c does to its file: "create" or "update".
func configureVerb(c agentconfig.Change) string {
	if c.Creates() {
		return "create"
	}
	return "update"
}
