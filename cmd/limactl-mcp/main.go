// Command limactl-mcp is a Lima CLI plugin (`limactl mcp ...`): an MCP server whose file and
// shell tools run inside a Lima VM on a staged copy of the working directory.
//
// This package is the cobra wiring only: commands, flags, the output of errors and the exit
// codes. What a command does is in internal/command/NAMEcmd, in the style of GitHub's gh CLI:
// newNAMECmd(ios, runF) binds the flags into a NAMEcmd.Options (IO streams, parsed flags,
// dependencies as functions) and calls runF(ctx, opts) when a test passes one, otherwise
// NAMEcmd.Run(ctx, opts). Only gendocs, which documents the cobra command tree itself, is
// here whole.
package main

import (
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

func main() {
	os.Exit(run(os.Args[1:], iostreams.System()))
}
