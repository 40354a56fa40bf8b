package watchcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `watch INSTANCE`: the cobra command, which binds the command line into Options and
// calls Run (runF instead, when a test gives one).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "watch INSTANCE",
		Short: "Watch the agent's blocked network attempts live; allow one with a key",
		Long: `Show the destinations (host and port) the agent of the working directory's session in
INSTANCE was refused by its network policy, newest first, with how often and when, updated
every second, and decide on each (docs/network.md):

  o   allow a held connection once (that one connection only)
  a   allow it for the session, at once (what network INSTANCE allow HOST:PORT does)
  s   allow it and save the policy as the project's (network ... allow HOST:PORT --save)
  d   deny it: it stays blocked, and is no longer shown by this watch
  q   quit

While watch runs, the guest's proxy holds a connection it would refuse, up to 60 s, instead of
refusing it: it is listed first, as HELD, with the time left; o lets it through, a allows its
destination and lets it through, d refuses it now. Nobody watching, the attempt fails at once:
the agent retries it (or the person tells it to) once allowed. With --json, watch asks
nothing: it prints one JSON object per new or changed blocked destination per line (a held
connection once, with "held": true), until interrupted, for scripts. A session whose policy is
open has nothing blocked: watch says so.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cmdutil.CompleteInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmdutil.AddWorkdirFlag(cmd, &opts.Workdir)
	cmdutil.AddSessionFlag(cmd, &opts.Session, cmdutil.SessionUsage)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "Print each new or changed blocked destination as a JSON line, until interrupted; ask nothing")
	return cmd
}
