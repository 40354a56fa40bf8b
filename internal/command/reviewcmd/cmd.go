package reviewcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `review`: the cobra command, which binds the command line into Options and calls Run
// (runF instead, when a test gives one: Options and Run are tested without cobra).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "review [INSTANCE] [PATH...]",
		Short: "Review the agent's changes and apply what you accept to the host",
		Long: `Review what the agent changed in the staged copy of the working directory, and apply what
you accept to the host: everything, some files, or some hunks of a file. Conflicts (paths the
host changed too) offer keep-host, take-guest or skip.

Every write is atomic and backed up first; "review --undo" restores the last apply. Without a
terminal nothing is written unless --yes is given (which applies every change that is not a
conflict). PATH arguments (after the instance name) limit the review to those paths.`,
		Example: `  limactl mcp review agent                 # the interactive review
  limactl mcp review agent --dry-run       # what --yes would do
  limactl mcp review agent --patch | git apply --check
  limactl mcp review agent src/ --yes      # accept everything under src/
  limactl mcp review agent --undo          # restore what the last apply changed
  limactl mcp review agent --since 3       # what the agent changed in the guest since checkpoint 3
  limactl mcp review agent --compare try1,try2,try3   # pick per file or hunk among forks`,
		ValidArgsFunction: cmdutil.CompleteInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = cmdutil.InstanceArg(args)
			if len(args) > 1 {
				opts.Paths = args[1:]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmdutil.AddWorkdirFlag(cmd, &opts.Workdir)
	cmdutil.AddSessionFlag(cmd, &opts.Session, cmdutil.SessionUsage)
	flags := cmd.Flags()
	flags.BoolVarP(&opts.Yes, "yes", "y", false, "Apply every change that is not a conflict, without asking (conflicts are listed, not applied)")
	flags.BoolVar(&opts.DryRun, "dry-run", false, "Show what would be written, and write nothing")
	flags.BoolVar(&opts.Patch, "patch", false, "Print the changes as a unified diff that `git apply` accepts, and write nothing")
	flags.BoolVar(&opts.JSON, "json", false, "Print the changeset as JSON, and write nothing")
	flags.BoolVar(&opts.Accessible, "accessible", false, "Plain prompts for screen readers instead of the full-screen interface")
	flags.BoolVar(&opts.Undo, "undo", false, "Restore what the last apply overwrote or deleted")
	flags.StringVar(&opts.Since, "since", "", "Show only what changed in the guest copy since this checkpoint (summary, --patch or --json), and write nothing")
	flags.StringSliceVar(&opts.Compare, "compare", nil, "Compare sessions (comma-separated, e.g. try1,try2,try3) path by path, take one's version or hunks of several, and apply the picks through the first one (docs/sessions.md#compare-in-the-review)")
	for _, other := range []string{"session", "yes", "dry-run", "patch", "json", "undo", "since"} {
		cmd.MarkFlagsMutuallyExclusive("compare", other)
	}
	cmd.MarkFlagsMutuallyExclusive("since", "yes")
	cmd.MarkFlagsMutuallyExclusive("since", "undo")
	cmd.MarkFlagsMutuallyExclusive("since", "dry-run")
	return cmd
}
