package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/comparecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/configurecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/discardcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/command/forkcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/infocmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/logcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/networkcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/portscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/restorecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/servecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/shellcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/statuscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/synccmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/watchcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/version"
)

// run runs the command line args and returns the exit code (see internal/command/exitcode).
func run(args []string, ios *iostreams.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(ios)
	root.SetArgs(args)
	return exitStatus(ios, root.ExecuteContext(ctx))
}

// exitStatus prints the error a command returned, unless the command has already explained
// itself on stderr, and returns the exit code.
func exitStatus(ios *iostreams.IOStreams, err error) int {
	if err != nil && !errors.Is(err, exitcode.ErrSilent) {
		ios.PrintError(err) // escaped: the message may quote the guest (a runner's error, a name)
	}
	return exitcode.Of(err)
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
	cmd.SetVersionTemplate(version.Describe())
	cmd.Flags().BoolP("version", "v", false, "Print the version")
	f := cmdutil.New(ios)
	cmd.AddCommand(
		infocmd.NewCmd(f, nil),
		servecmd.NewCmd(f, nil),
		configurecmd.NewCmd(f, nil),
		statuscmd.NewCmd(f, nil),
		portscmd.NewCmd(f, nil),
		synccmd.NewCmd(f, nil),
		restorecmd.NewCmd(f, nil),
		discardcmd.NewCmd(f, nil),
		forkcmd.NewCmd(f, nil),
		comparecmd.NewCmd(f, nil),
		reviewcmd.NewCmd(f, nil),
		logcmd.NewCmd(f, nil),
		networkcmd.NewCmd(f, nil),
		watchcmd.NewCmd(f, nil),
		shellcmd.NewCmd(f, nil),
		newGenerateDocCmd(),
		newGenDocsCmd(ios),
	)
	return cmd
}
