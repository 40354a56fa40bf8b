// Package infocmd is what `limactl mcp info` does: it prints the MCP tools and their schemas
// as JSON.
package infocmd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
)

// Options are what info depends on.
type Options struct {
	IO *iostreams.IOStreams
}

// Run prints the tools.
func Run(ctx context.Context, opts *Options) error {
	list, err := tools.List(ctx)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(map[string]any{"tools": list}, "", "    ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(opts.IO.Out, string(b))
	return err
}
