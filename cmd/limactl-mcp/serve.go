package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

type serveOptions struct {
	Instance string
	Workdir  string
	NoRunner bool
	Debug    bool
}

func newServeCmd(ios *iostreams.IOStreams) *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve [INSTANCE]",
		Short: "Serve MCP over stdio",
		Long: `Serve MCP over stdio: file and shell tools that run inside the Lima instance INSTANCE
(default "default").

Expected to be executed via an AI agent, not by a human. Standard output carries MCP messages
only; logs go to standard error.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = instance.DefaultName
			if len(args) > 0 {
				opts.Instance = args[0]
			}
			return runServe(cmd, ios, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Workdir, "workdir", "", "Working directory of the agent (default: the current directory)")
	cmd.Flags().BoolVar(&opts.NoRunner, "no-runner", false, "Run each command in its own ssh session and login shell (slower; for debugging)")
	cmd.Flags().BoolVar(&opts.Debug, "debug", false, "Log debug messages to standard error")
	return cmd
}

func runServe(cmd *cobra.Command, ios *iostreams.IOStreams, opts *serveOptions) error {
	ctx := cmd.Context()
	level := slog.LevelInfo
	if opts.Debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(ios.ErrOut, &slog.HandlerOptions{Level: level}))

	workdir := opts.Workdir
	if workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		workdir = wd
	}
	limactl, err := instance.Limactl()
	if err != nil {
		return err
	}
	inst, err := instance.Inspect(ctx, limactl, opts.Instance)
	if err != nil {
		return err
	}
	if err := inst.CheckRunning(); err != nil {
		// Serve anyway: every call says what is wrong until the instance runs.
		log.Warn(err.Error())
	}

	conn := guest.New(instance.Resolver(limactl, opts.Instance), guest.Options{Logger: log, NoRunner: opts.NoRunner})
	defer conn.Close()
	// Connect (and start the runner) while the client initializes.
	go func() {
		if _, err := conn.UsesRunner(ctx); err != nil && !errors.Is(err, guest.ErrClosed) {
			log.Warn("cannot connect to the instance yet", "error", err)
		}
	}()

	ws := workspace.Identity(workdir)
	server := tools.NewServer(fmt.Sprintf("Lima instance: %s. Working directory: %s.", opts.Instance, workdir))
	tools.New(conn, ws, tools.DefaultLimits).Register(server)
	err = server.Run(ctx, &mcp.StdioTransport{})
	if ctx.Err() != nil {
		return nil // interrupted: a normal way for a client to stop its server
	}
	return err
}
