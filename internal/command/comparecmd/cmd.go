package comparecmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `compare`: the cobra command, which binds the command line into Options and calls
// Run (runF instead, when a test gives one).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "compare INSTANCE SESSION SESSION [SESSION...]",
		Short: "Compare the pending changes of sessions of one working directory: per file, which changed it and how, where they agree and where they differ",
		Long: `compare lists every path that any of the sessions changed (against its baseline: forks of one
session share it), with each session's change and line counts, and whether the sessions that
changed it agree (the same result) or differ. "default" is the unnamed session. Read-only:
nothing is changed in the guest or on the host. Review the one you keep with
"limactl mcp review INSTANCE --session NAME", or take a version per file or per hunk with
"limactl mcp review INSTANCE --compare S1,S2[,...]".`,
		Example:           `  limactl mcp compare agent try1 try2 try3`,
		Args:              cobra.MinimumNArgs(3),
		ValidArgsFunction: cmdutil.CompleteInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance, opts.Sessions = args[0], args[1:]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmdutil.AddWorkdirFlag(cmd, &opts.Workdir)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "Print the comparison as JSON (docs/sessions.md#compare)")
	return cmd
}
