package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
)

func newInfoCmd(ios *iostreams.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "Show information about the MCP server (the tools and their schemas, as JSON)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := tools.List(cmd.Context())
			if err != nil {
				return err
			}
			b, err := json.MarshalIndent(map[string]any{"tools": list}, "", "    ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(ios.Out, string(b))
			return err
		},
	}
}
