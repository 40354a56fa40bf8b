package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

type serveOptions struct {
	Instance string
	session  sessionFlags
	Fresh    bool
	NoRunner bool
	Debug    bool
	Create   bool
	Template string
	http     httpOptions
}

// sessionFlags are the flags that pick and shape a staged session.
type sessionFlags struct {
	Workdir        string
	Excludes       []string
	IncludeIgnored bool
}

func (f *sessionFlags) register(cmd *cobra.Command, staging bool) {
	cmd.Flags().StringVar(&f.Workdir, "workdir", "", "Working directory (default: the current directory)")
	if staging {
		cmd.Flags().StringArrayVar(&f.Excludes, "exclude", nil, "Do not stage paths matching this gitignore-style `PATTERN` (repeatable)")
		cmd.Flags().BoolVar(&f.IncludeIgnored, "include-ignored", false, "Also stage what .gitignore ignores (the project ignore file and --exclude still apply)")
	}
}

func newServeCmd(ios *iostreams.IOStreams) *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve [INSTANCE]",
		Short: "Serve MCP over stdio (or Streamable HTTP with --http)",
		Long: `Serve MCP over stdio (or Streamable HTTP with --http, on loopback, with a bearer token):
file and shell tools that run inside the Lima instance INSTANCE (default "default").

For an instance without mounts (limactl start --mount-none), the working directory is staged
into the guest at the same absolute path, and the tools work on that copy: nothing reaches the
host until a person runs "limactl mcp review". A restarted server resumes the staged copy with
the agent's work in it. An instance with mounts keeps Lima's behaviour (the live mount).

Expected to be executed via an AI agent, not by a human. Standard output carries MCP messages
only; logs go to standard error.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = instanceArg(args)
			return runServe(cmd.Context(), ios, opts)
		},
	}
	opts.session.register(cmd, true)
	cmd.Flags().BoolVar(&opts.Fresh, "fresh", false, "Discard the staged copy (and the agent's pending changes in it) and stage again")
	cmd.Flags().BoolVar(&opts.NoRunner, "no-runner", false, "Run each command in its own ssh session and login shell (slower; for debugging)")
	cmd.Flags().BoolVar(&opts.Debug, "debug", false, "Log debug messages to standard error")
	cmd.Flags().BoolVar(&opts.Create, "create", false, "Create and start the instance (without host mounts) if it does not exist, start it if it is stopped")
	cmd.Flags().StringVar(&opts.Template, "template", instance.DefaultTemplate, "Template of an instance made by --create")
	opts.http.register(cmd)
	return cmd
}

func runServe(ctx context.Context, ios *iostreams.IOStreams, opts *serveOptions) error {
	level := slog.LevelInfo
	if opts.Debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(ios.ErrOut, &slog.HandlerOptions{Level: level}))
	workdir, err := resolveWorkdir(opts.session.Workdir)
	if err != nil {
		return err
	}
	limactl, err := instance.Limactl()
	if err != nil {
		return err
	}
	if opts.Create {
		log.Info("making sure the instance exists and runs", "instance", opts.Instance)
		if _, err := instance.EnsureSandbox(ctx, limactl, opts.Instance, instance.SandboxOptions{Create: true, Template: opts.Template, Progress: ios.ErrOut}); err != nil {
			return err
		}
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

	var src tools.WorkspaceSource
	var pending tools.PendingSource
	instructions := fmt.Sprintf("Lima instance: %s. Working directory: %s.", opts.Instance, workdir)
	if mounts := inst.Mounts(); len(mounts) > 0 {
		log.Warn("the instance mounts host directories: the tools work on the live mount, so nothing will be reviewable with `limactl mcp review`; for a staged, reviewable sandbox use an instance started with --mount-none",
			"instance", opts.Instance, "mounts", mounts)
		src = tools.Static{WS: workspace.Identity(workdir)}
		// Connect (and start the runner) while the client initializes.
		go func() {
			if _, err := conn.UsesRunner(ctx); err != nil && !errors.Is(err, guest.ErrClosed) {
				log.Warn("cannot connect to the instance yet", "error", err)
			}
		}()
	} else {
		store := staging.StoreFor(inst.Dir)
		staged := tools.NewStaged(ctx, func(ctx context.Context, progress func(staging.Progress)) (*staging.Session, error) {
			// Connect first, so that the staging time logged is the staging's own.
			t0 := time.Now()
			if _, err := conn.Home(ctx); err != nil {
				log.Error("cannot connect to the instance", "error", err)
				return nil, err
			}
			log.Debug("connected", "took", time.Since(t0).Round(time.Millisecond))
			start := time.Now()
			report := progressLogger(log, progress)
			sess, outcome, err := staging.Open(ctx, conn, store, staging.OpenOptions{
				Instance: opts.Instance, Workdir: workdir, Fresh: opts.Fresh, Logger: log, Progress: report,
				Select: staging.SelectOptions{Excludes: opts.session.Excludes, IncludeIgnored: opts.session.IncludeIgnored},
			})
			if err != nil {
				log.Error("staging failed", "error", err)
				return nil, err
			}
			opts.Fresh = false // a retry after a failure must not discard again
			n, size := sess.Baseline.Files()
			log.Info("working directory "+string(outcome), "workdir", workdir, "guest_path", sess.State.GuestPath,
				"files", n, "bytes", size, "took", time.Since(start).Round(time.Millisecond))
			return sess, nil
		})
		staged.Start()
		src, pending = staged, staged
		instructions += " The working directory is a staged copy inside the VM: your changes reach the host only after a person reviews them (limactl mcp review). Use pending_changes to see what you changed."
	}
	server := tools.NewServer(instructions)
	tools.New(conn, src, tools.DefaultLimits, pending).Register(server)
	err = serveTransport(ctx, ios, log, server, &opts.http)
	if ctx.Err() != nil {
		return nil // interrupted: a normal way for a client to stop its server
	}
	return err
}

// progressLogger logs staging progress on stderr for large trees, at most every 2 seconds.
func progressLogger(log *slog.Logger, next func(staging.Progress)) func(staging.Progress) {
	last := time.Now()
	return func(p staging.Progress) {
		next(p)
		if time.Since(last) < 2*time.Second && p.Files < p.TotalFiles {
			return
		}
		last = time.Now()
		log.Info("staging", "files", fmt.Sprintf("%d/%d", p.Files, p.TotalFiles),
			"MB", fmt.Sprintf("%.1f/%.1f", float64(p.Bytes)/1e6, float64(p.TotalBytes)/1e6),
			"MB/s", fmt.Sprintf("%.1f", p.Rate()/1e6))
	}
}
