package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/discardcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/restorecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/statuscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/synccmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// newStatusCmd is `status`; runF, when a test gives one, runs instead of statuscmd.Run.
func newStatusCmd(ios *iostreams.IOStreams, runF func(context.Context, *statuscmd.Options) error) *cobra.Command {
	opts := &statuscmd.Options{IO: ios}
	cmd := &cobra.Command{
		Use:               "status [INSTANCE]",
		Short:             "Show the staged sessions of an instance and their pending changes",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = instanceArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return statuscmd.Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "Print JSON")
	addSessionFlag(cmd, &opts.Session, "Show only the sessions called `NAME` (default: every session of every working directory; \"default\": the unnamed ones)")
	return cmd
}

// newSyncCmd is `sync`; runF, when a test gives one, runs instead of synccmd.Run.
func newSyncCmd(ios *iostreams.IOStreams, runF func(context.Context, *synccmd.Options) error) *cobra.Command {
	opts := &synccmd.Options{IO: ios}
	cmd := &cobra.Command{
		Use:   "sync [INSTANCE]",
		Short: "Bring host edits made since staging into the guest copy, keeping the agent's work",
		Long: `Bring host edits made since staging into the guest copy. A file changed on both sides is a
conflict: the guest's version is kept and it stays pending for review.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = instanceArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return synccmd.Run(cmd.Context(), opts)
		},
	}
	addWorkdirFlag(cmd, &opts.Workdir)
	addSessionFlag(cmd, &opts.Session, sessionUsage)
	return cmd
}

// newDiscardCmd is `discard`; runF, when a test gives one, runs instead of discardcmd.Run.
func newDiscardCmd(ios *iostreams.IOStreams, runF func(context.Context, *discardcmd.Options) error) *cobra.Command {
	opts := &discardcmd.Options{IO: ios}
	cmd := &cobra.Command{
		Use:               "discard [INSTANCE]",
		Short:             "Remove a staged session: its guest copy (with any pending changes) and its state",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = instanceArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return discardcmd.Run(cmd.Context(), opts)
		},
	}
	addWorkdirFlag(cmd, &opts.Workdir)
	addSessionFlag(cmd, &opts.Session, sessionUsage)
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "Do not ask for confirmation")
	return cmd
}

// newRestoreCmd is `restore`; runF, when a test gives one, runs instead of restorecmd.Run.
func newRestoreCmd(ios *iostreams.IOStreams, runF func(context.Context, *restorecmd.Options) error) *cobra.Command {
	opts := &restorecmd.Options{IO: ios}
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
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = instanceArg(args[:len(args)-1])
			opts.Checkpoint = args[len(args)-1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return restorecmd.Run(cmd.Context(), opts)
		},
	}
	addWorkdirFlag(cmd, &opts.Workdir)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "List what the restore would change, changing nothing")
	addSessionFlag(cmd, &opts.Session, sessionUsage)
	return cmd
}
