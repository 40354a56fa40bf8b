package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/tools"
)

// newGenerateDocCmd is Lima's plugin contract: Lima's Makefile builds its website's MCP page
// with `limactl-mcp generate-doc DIR`, which writes DIR/mcp.md (front matter for Lima's Hugo
// site, then the tools). Installed in Lima's place, ours writes its own tools the same way.
func newGenerateDocCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "generate-doc DIR",
		Short:  "Generate documentation pages",
		Args:   cobra.MinimumNArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			list, err := tools.List(cmd.Context())
			if err != nil {
				return fmt.Errorf("listing the tools: %w", err)
			}
			var b bytes.Buffer
			b.WriteString(`---
title: MCP tools
weight: 99
---
These are the MCP tools of limactl-mcp (github.com/limactl-mcp/limactl-mcp), the plugin that
replaces Lima's bundled ` + "`limactl-mcp`" + `: the "MCP Sandbox Interface" of Lima's server
(https://pkg.go.dev/github.com/lima-vm/lima/v2/pkg/mcp/msi), same names and schemas, and more.
They run inside a Lima VM, on a staged copy of the working directory that reaches the host only
after a person reviews it (` + "`limactl mcp review`" + `).

`)
			if err := tools.WriteReference(&b, list); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "mcp.md"), b.Bytes(), 0o644)
		},
	}
}
