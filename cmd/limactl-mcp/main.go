// Command limactl-mcp is a Lima CLI plugin (`limactl mcp ...`): an MCP server whose file and
// shell tools run inside a Lima VM on a staged copy of the working directory.
package main

import (
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

func main() {
	os.Exit(run(os.Args[1:], iostreams.System()))
}
