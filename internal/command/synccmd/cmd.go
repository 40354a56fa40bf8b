package synccmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `sync`: the cobra command, which binds the command line into Options and calls Run
// (runF instead, when a test gives one: Options and Run are tested without cobra).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "sync [INSTANCE]",
		Short: "Bring host edits made since staging into the guest copy, keeping the agent's work",
		Long: `Bring host edits made since staging into the guest copy. A file changed on both sides is a
conflict: the guest's version is kept and it stays pending for review.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cmdutil.CompleteInstances,
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
	return cmd
}
