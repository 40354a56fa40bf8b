package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/version"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	// exitPending means a command needed consent it could not get (for example a review
	// without a terminal and without --yes).
	exitPending = 2
)

// errSilent is returned by a command that has already explained itself on stderr.
var errSilent = errors.New("silent error")

// exitCodeError carries a specific exit code.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

func run(args []string, ios *iostreams.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(ios)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitError
	var ec *exitCodeError
	if errors.As(err, &ec) {
		code = ec.code
	}
	if !errors.Is(err, errSilent) {
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: %v\n", err)
	}
	return code
}

func newRootCmd(ios *iostreams.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "limactl-mcp",
		Short: "Sandboxed MCP file and shell tools for AI agents, in a Lima VM, with review before anything reaches the host",
		Long: `limactl-mcp is a Lima plugin (run it as "limactl mcp ...").

An AI agent gets its file and shell tools from "limactl mcp serve". They run inside a Lima VM
on a staged copy of the working directory; nothing reaches the host until a person reviews it.`,
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(ios.In)
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	cmd.SetVersionTemplate("limactl-mcp version {{.Version}}\n")
	cmd.Flags().BoolP("version", "v", false, "Print the version")
	cmd.AddCommand(
		newInfoCmd(ios),
		newServeCmd(ios),
		newConfigureCmd(ios),
		newStatusCmd(ios),
		newSyncCmd(ios),
		newDiscardCmd(ios),
		newReviewCmd(ios),
		newGenDocsCmd(ios),
	)
	return cmd
}
