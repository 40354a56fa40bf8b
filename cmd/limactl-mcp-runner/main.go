// Command limactl-mcp-runner runs inside the guest. limactl-mcp copies it there and talks to
// it over one SSH channel (see internal/runnerproto). It is not meant to be run by hand.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/runner"
	"github.com/limactl-mcp/limactl-mcp/internal/runner/background"
)

const usage = `usage: limactl-mcp-runner serve [--login] [--env-file FILE]   (started by limactl-mcp inside a Lima guest)
       limactl-mcp-runner net ensure|remove|release|as|proxy ... (the network policy, as root)`

func main() {
	if len(os.Args) == 3 && os.Args[1] == background.SupervisorArg {
		// The supervisor of one background process, started by a runner (internal/runner/background).
		if err := background.Supervise(os.Args[2]); err != nil {
			os.Exit(1)
		}
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		os.Exit(serve(os.Args[2:]))
	case "net":
		os.Exit(runNet(os.Args[2:], os.Stdout, os.Stderr))
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
}

// serve answers the host on stdin and stdout. --login gives the commands the user's login
// environment; --env-file adds a file's variables first (the network policy's proxy settings).
func serve(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	login := fs.Bool("login", false, "")
	envFile := fs.String("env-file", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	if *envFile != "" {
		if err := runner.ApplyEnvFile(*envFile); err != nil {
			fmt.Fprintln(os.Stderr, "limactl-mcp-runner: the environment file:", err)
			return 1
		}
	}
	if err := runner.Serve(os.Stdin, os.Stdout, *login); err != nil {
		fmt.Fprintln(os.Stderr, "limactl-mcp-runner:", err)
		return 1
	}
	return 0
}
