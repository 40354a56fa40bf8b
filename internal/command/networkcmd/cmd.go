// Package networkcmd is `limactl mcp network`: the agent's network policy. Its first
// subcommand, `presets`, prints the presets an allow policy may name (allow:@go,example.com).
package networkcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `network`, the parent of the network policy's subcommands.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "network",
		Short: "The agent's network policy: its presets",
		Long: `The agent's network policy (serve --network, shell --network; docs/network.md).

An allow policy may name presets, sets of hosts kept with limactl-mcp, with @:
--network=allow:@go,@npm,example.com. "limactl mcp network presets" lists them.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(NewPresetsCmd(f, nil))
	return cmd
}

// NewPresetsCmd is `network presets`: the cobra command, which binds the command line into
// PresetsOptions and calls RunPresets (runF instead, when a test gives one).
func NewPresetsCmd(f *cmdutil.Factory, runF func(context.Context, *PresetsOptions) error) *cobra.Command {
	opts := &PresetsOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "presets",
		Short: "List the network presets (allow:@NAME) and the hosts each allows",
		Long: `List the presets an allow policy may name with @, and the hosts each stands for:
--network=allow:@go,@npm,example.com allows the hosts of @go and @npm, and example.com.

A preset allows its hosts as any host of a policy does: every request, on every port,
including those that write (a publish to a registry, a push with a token the agent holds).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunPresets(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "Print the presets as JSON")
	return cmd
}
