package forkcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `fork`: the cobra command, which binds the command line into Options and calls Run
// (runF instead, when a test gives one: Options and Run are tested without cobra).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "fork INSTANCE --session FROM[@CHECKPOINT] NEW...",
		Short: "Make new sessions that start as exact copies of a session (now, or at one of its checkpoints), to let several agents try the same task",
		Long: `fork makes each NEW session an exact copy of the session FROM's guest copy, as it is now or
at its checkpoint CHECKPOINT, with FROM's baseline: each new session's review compares against
the same host state as FROM's. Run an agent in each (configure or serve with --session NEW),
then see how they differ with "limactl mcp compare INSTANCE NEW...", review and apply the one
you keep, and "limactl mcp discard INSTANCE --all-but NEW" removes the others.

The host is not touched. The copy is made in the guest (see docs/sessions.md for its cost).`,
		Example: `  limactl mcp fork agent --session default@3 try1 try2 try3
  limactl mcp fork agent --session claude attempt-b`,
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: cmdutil.CompleteInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance, opts.Names = args[0], args[1:]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmdutil.AddWorkdirFlag(cmd, &opts.Workdir)
	cmd.Flags().StringVar(&opts.From, "session", "", "The session `FROM[@CHECKPOINT]` to copy: its name (default: the unnamed session), and a checkpoint of it to start from (default: its copy as it is now)")
	return cmd
}
