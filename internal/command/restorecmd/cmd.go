package restorecmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `restore`: the cobra command, which binds the command line into Options and calls Run
// (runF instead, when a test gives one: Options and Run are tested without cobra).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "restore [INSTANCE] CHECKPOINT",
		Short: "Put the guest copy of a staged session back to one of its checkpoints (the host is not touched)",
		Long: `Put the guest copy of a staged session back exactly as a checkpoint saved it: entries made since
are removed, files, modes, symlinks and directories come back. Only the copy in the guest changes;
the host is never touched, and the pending changes then follow what the copy holds. The copy as it
was is checkpointed first, so a restore can be undone with another restore. ` + "`limactl mcp status`" + `
lists the checkpoints.`,
		Example: `  limactl mcp restore agent 3
  limactl mcp restore agent 3 --dry-run`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: cmdutil.CompleteInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = cmdutil.InstanceArg(args[:len(args)-1])
			opts.Checkpoint = args[len(args)-1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmdutil.AddWorkdirFlag(cmd, &opts.Workdir)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "List what the restore would change, changing nothing")
	cmdutil.AddSessionFlag(cmd, &opts.Session, cmdutil.SessionUsage)
	return cmd
}
