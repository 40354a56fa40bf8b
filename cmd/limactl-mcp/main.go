// Command limactl-mcp is a Lima CLI plugin (`limactl mcp ...`): an MCP server whose file and
// shell tools run inside a Lima VM on a staged copy of the working directory.
//
// This package is the root of the command tree only: it assembles the commands, prints the
// error a command returns and turns it into the exit code. Each command lives in one place,
// internal/command/NAMEcmd, in the style of GitHub's gh CLI: NewCmd(f, runF) binds the flags
// into a NAMEcmd.Options (IO streams from the cmdutil.Factory, parsed flags, dependencies as
// functions) and calls runF(ctx, opts) when a test passes one, otherwise NAMEcmd.Run(ctx,
// opts). Only gendocs and generate-doc, which document the command tree and the tools, are
// here whole.
package main

import (
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

func main() {
	os.Exit(run(os.Args[1:], iostreams.System()))
}
