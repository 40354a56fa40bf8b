package statuscmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `status`: the cobra command, which binds the command line into Options and calls Run
// (runF instead, when a test gives one: Options and Run are tested without cobra).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:               "status [INSTANCE]",
		Short:             "Show the staged sessions of an instance and their pending changes",
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
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "Print JSON")
	cmdutil.AddSessionFlag(cmd, &opts.Session, "Show only the sessions called `NAME` (default: every session of every working directory; \"default\": the unnamed ones)")
	return cmd
}
