package logcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `log`: the cobra command, which binds the command line into Options and calls Run
// (runF instead, when a test gives one: Options and Run are tested without cobra).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "log [INSTANCE]",
		Short: "Show what the agent did in a staged session: every tool call, command, checkpoint and apply, in order",
		Long: fmt.Sprintf(`Show the timeline of a staged session: every MCP tool call of its servers (tool, arguments
summarised, duration, result size, exit code or error), every "limactl mcp shell" command,
background processes, checkpoints and restores, syncs, review applies and undos, and under a
network policy the agent's connections (allowed and blocked, from the guest's record), one
line each, in the order they began. File contents and long arguments are shown as their size and hash; known
secret values are redacted; the environment is never recorded.

--follow keeps printing events as they are recorded, in the same order: it holds each event
it reads for %s, so that one written a little later but begun earlier (a network event, read
from the guest after the command that made it) comes in its place. An event that began before
a line already printed is printed when it is read, marked "(late)" ("log" without --follow
shows it in its place); with --json it is printed as it is (its "t" says where it belongs).

--json prints the events as JSON lines (the schema is in docs/log.md); --commands prints the
shell commands in order as a script a person can read (it is never run).`, DefaultSettle),
		Example: `  limactl mcp log agent
  limactl mcp log agent --since 3          # since checkpoint 3
  limactl mcp log agent --since 10m --follow
  limactl mcp log agent --commands > what-the-agent-ran.sh`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cmdutil.CompleteInstances,
		PreRunE: func(*cobra.Command, []string) error {
			return opts.Validate()
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = cmdutil.InstanceArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmdutil.AddWorkdirFlag(cmd, &opts.Workdir)
	cmdutil.AddSessionFlag(cmd, &opts.Session, cmdutil.SessionUsage)
	flags := cmd.Flags()
	flags.BoolVarP(&opts.Follow, "follow", "f", false, fmt.Sprintf("Keep printing events as they are recorded, in the order they began (each held %s; a late one is marked), until interrupted", DefaultSettle))
	flags.StringVar(&opts.Since, "since", "", "Show only events from `TIME|CHECKPOINT` on: an RFC 3339 time, HH:MM[:SS] today, a duration ago (10m, 2h), or a checkpoint's id")
	flags.BoolVar(&opts.JSON, "json", false, "Print the events as JSON lines (schema: docs/log.md)")
	flags.BoolVar(&opts.Commands, "commands", false, "Print the shell commands in order, as a script for a person to read (never run)")
	return cmd
}
