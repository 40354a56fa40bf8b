// Command limactl-mcp-runner runs inside the guest. limactl-mcp copies it there and talks to
// it over one SSH channel (see internal/runnerproto). It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/runner"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == runner.SupervisorArg {
		// The supervisor of one background process, started by a runner (internal/runner/bgsupervise.go).
		if err := runner.Supervise(os.Args[2]); err != nil {
			os.Exit(1)
		}
		return
	}
	login := len(os.Args) == 3 && os.Args[2] == "--login"
	if len(os.Args) < 2 || os.Args[1] != "serve" || (len(os.Args) > 2 && !login) {
		fmt.Fprintln(os.Stderr, "usage: limactl-mcp-runner serve [--login]   (started by limactl-mcp inside a Lima guest)")
		os.Exit(2)
	}
	if err := runner.Serve(os.Stdin, os.Stdout, login); err != nil {
		fmt.Fprintln(os.Stderr, "limactl-mcp-runner:", err)
		os.Exit(1)
	}
}
