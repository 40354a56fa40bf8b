package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/infocmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// newInfoCmd is `info`; runF, when a test gives one, runs instead of infocmd.Run.
func newInfoCmd(ios *iostreams.IOStreams, runF func(context.Context, *infocmd.Options) error) *cobra.Command {
	opts := &infocmd.Options{IO: ios}
	return &cobra.Command{
		Use:   "info",
		Short: "Show information about the MCP server (the tools and their schemas, as JSON)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return infocmd.Run(cmd.Context(), opts)
		},
	}
}
