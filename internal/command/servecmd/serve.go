// Package servecmd is what `limactl mcp serve` does: it finds the instance (creating or
// starting it with --create), stages the working directory into it in the background (or,
// for an instance with mounts, works on the live mount), and serves the MCP tools over stdio
// or Streamable HTTP. Standard output carries MCP messages only; logs go to standard error.
package servecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/preview"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// Options are the parsed command line of serve and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Session is --session: the session's name ("" or "default": the unnamed session).
	Session        string
	Excludes       []string
	IncludeIgnored bool
	Fresh          bool
	NoRunner       bool
	Debug          bool
	Create         bool
	Template       string
	HTTP           HTTPOptions
	// Network is --network: the session's network policy ("": the one it holds, else open).
	Network string
	// Secrets are --secret and --agent-secrets: values kept on the host (docs/secrets.md).
	Secrets cmdutil.SecretFlags
	// Publish is --publish: the host address the previews listen on ("": 127.0.0.1).
	Publish string

	// Open finds the instance and connects to it, logging to log (default: OpenInstance).
	Open func(ctx context.Context, opts *Options, log *slog.Logger) (*sessionopen.Target, error)
}

// OpenInstance finds the instance with limactl, after creating or starting it with --create,
// and connects to it even when it is not running: the tools say what is wrong until it runs.
func OpenInstance(ctx context.Context, opts *Options, log *slog.Logger) (*sessionopen.Target, error) {
	limactl, err := instance.Limactl()
	if err != nil {
		return nil, err
	}
	if opts.Create {
		log.Info("making sure the instance exists and runs", "instance", opts.Instance)
		if _, err := instance.EnsureSandbox(ctx, limactl, opts.Instance, instance.SandboxOptions{Create: true, Template: opts.Template, Progress: opts.IO.ErrOut}); err != nil {
			return nil, err
		}
	}
	return sessionopen.Open(ctx, limactl, opts.Instance, sessionopen.Options{Logger: log, NoRunner: opts.NoRunner, ConnectStopped: true, Handoff: true})
}

// Run serves until ctx ends (a normal way for a client to stop its server: nil) or the
// transport fails.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	level := slog.LevelInfo
	if opts.Debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(ios.ErrOut, &slog.HandlerOptions{Level: level}))
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "serve", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session})
	if err != nil {
		return err
	}
	workdir, session := ref.Workdir, ref.Session
	if opts.Publish != "" {
		a, err := preview.ParsePublish(opts.Publish)
		if err != nil {
			return err
		}
		if !a.IsLoopback() {
			log.Warn("--publish: the agent's dev servers are reachable from other machines, through this one's address "+opts.Publish, "publish", opts.Publish)
		}
	}
	// The session is the real directory's; the agent was started in shown, which may reach it
	// through a symbolic link (a symlinked parent): its paths work too, and it sees them.
	shown, err := workdirpath.Abs(opts.Workdir)
	if err != nil {
		return err
	}
	// The secrets' values are read on the host before the VM is touched.
	secretSet, err := cmdutil.ResolveSecrets(ctx, opts.Secrets, nil)
	if err != nil {
		return err
	}
	open := opts.Open
	if open == nil {
		open = OpenInstance
	}
	t, err := open(ctx, opts, log)
	if errors.Is(err, instance.ErrNotExist) {
		// Serve anyway, as for a stopped instance: an agent's client that sees the server exit
		// shows only "connection closed", while a tool's error reaches the agent and the person.
		log.Warn(err.Error())
		return serveUnavailable(ctx, opts, log, fmt.Errorf("%w; then restart this MCP server (or fix the instance name in the agent's MCP configuration: limactl mcp configure)", err))
	}
	if err != nil {
		return err
	}
	defer t.Close()
	if t.ConnErr != nil {
		// Serve anyway: every call says what is wrong until the instance runs.
		log.Warn(t.ConnErr.Error())
	}
	conn := t.Conn
	var plan *sessionopen.Plan
	if len(t.Instance.Mounts()) == 0 {
		st, err := t.Lookup(workdir, session)
		if err != nil {
			return err
		}
		if plan, err = t.PlanSession(workdir, session, st, opts.Network); err != nil {
			return err
		}
		if plan.PolicyFile != "" {
			log.Info("network policy "+plan.Net.Network+" from the project's policy file on the host (no --network given)", "file", plan.PolicyFile)
		}
		if plan.Changes() {
			log.Warn("the session's network policy changes", "from", plan.Net.Previous, "to", plan.Net.Network)
		}
		if _, err := cmdutil.WireSecrets(t, plan, secretSet, ios.ErrOut); err != nil {
			return err
		}
		if plan.Net.Network != staging.OpenNetwork {
			log.Info("the agent's commands and tools run as a guest user of their own under network policy "+plan.Net.Network, "user", plan.Net.Agent.User)
		}
		conn = plan.Conn()
	} else if session != "" {
		return fmt.Errorf("--session %s needs a staged session, and instance %q mounts host directories (one live copy, no sessions): use an instance started with --mount-none", session, opts.Instance)
	} else if secretSet != nil {
		return fmt.Errorf("--secret needs a staged session, and instance %q mounts host directories: use an instance started with --mount-none", opts.Instance)
	} else if opts.Network != "" && opts.Network != staging.OpenNetwork {
		return fmt.Errorf("--network %s needs a staged session, and instance %q mounts host directories: use an instance started with --mount-none", opts.Network, opts.Instance)
	}

	var src tools.WorkspaceSource
	var pending tools.PendingSource
	var rec *recorder // nil: nothing recorded (a live mount has no session)
	instructions := fmt.Sprintf("Lima instance: %s. Working directory: %s.", opts.Instance, shown)
	if mounts := t.Instance.Mounts(); len(mounts) > 0 {
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
		st := &stager{conn: conn, plan: plan, log: log, opts: staging.OpenOptions{
			Instance: opts.Instance, Fresh: opts.Fresh, Logger: log,
			Select: staging.SelectOptions{Excludes: opts.Excludes, IncludeIgnored: opts.IncludeIgnored},
		}}
		staged := tools.NewStaged(ctx, st.open)
		if shown != workdir {
			staged.Shown = shown
			log.Info("the working directory is reached through a symbolic link: its session is the real directory's", "shown", shown, "workdir", workdir)
		}
		staged.Start()
		src, pending = staged, staged
		instructions += " The working directory is a staged copy inside the VM: your changes reach the host only after a person reviews them (limactl mcp review" + staging.SessionFlag(session) + "). Use pending_changes to see what you changed."
		instructions += sessionInstructions(session)
		instructions += networkInstructions(plan.Net.Network)
		tl := openTimeline(t.Store.SessionDir(staging.SessionIDOf(workdir, session)), log, secretSet.Values()...)
		rec = newRecorder(tl, workdir, shown)
		tl.Record(timeline.Event{Kind: timeline.ServeStart, Dir: shown, Note: "network policy " + plan.Net.Network})
		// Last of the defers: after the background processes were ended.
		defer func() { tl.Record(timeline.Event{Kind: timeline.ServeEnd}) }()
		if plan.Net.Network != staging.OpenNetwork {
			// The agent's connections, from the guest's record, into the timeline: read
			// after its commands, off their path; a last time after the background
			// processes were ended (this defer runs before the one above).
			rec.net = newNetRecorder(tl, agentNetRecord(conn), log, rec.backgroundMayRun).start()
			defer rec.net.stop()
		}
	}
	// Background processes live as long as this server: they are ended when it exits, within
	// a bound, so that a shutdown never waits on the guest (before the connection closes: the
	// defers run in reverse).
	sessionID := staging.SessionIDOf(workdir, session)
	bg, err := tools.NewBackground(conn, sessionID, tools.DefaultBackgroundLimits)
	if err != nil {
		return err
	}
	// Previews: the ports the background processes listen on, forwarded to the host over
	// this server's connection while they listen (internal/preview); `limactl mcp ports`
	// reads the record.
	fwd, err := preview.New(preview.Options{Dial: conn.DialGuest, Publish: opts.Publish, Logger: log,
		Record: &preview.RecordFile{Dir: filepath.Join(t.Store.Dir, "ports"), Record: preview.Record{
			ServePID: os.Getpid(), SessionID: sessionID, Session: session, Workdir: workdir}}})
	if err != nil {
		return err
	}
	bg.WithPreviews(fwd)
	defer func() {
		if err := bg.End(backgroundEndTimeout); err != nil {
			log.Warn("the background processes of this server may still run in the guest (limactl mcp discard ends them)", "error", err)
		}
	}()
	server := tools.NewServer(instructions)
	if rec != nil {
		// Added first, so outermost: it sees every call as the client does.
		server.AddReceivingMiddleware(rec.middleware)
	}
	tools.New(conn, src, tools.DefaultLimits, pending).WithBackground(bg).Register(server)
	err = serveTransport(ctx, ios, log, server, &opts.HTTP)
	if ctx.Err() != nil {
		return nil // interrupted: a normal way for a client to stop its server
	}
	return err
}

// backgroundEndTimeout bounds how long serve's exit spends ending its background processes.
const backgroundEndTimeout = 3 * time.Second

// serveUnavailable serves the tools of a server whose instance cannot be found: every call
// says why and what to do.
func serveUnavailable(ctx context.Context, opts *Options, log *slog.Logger, why error) error {
	conn := guest.New(func(context.Context) (*sshlink.Target, error) { return nil, why }, guest.Options{Logger: log})
	defer conn.Close()
	u := tools.Unavailable{Err: why}
	server := tools.NewServer(fmt.Sprintf("Lima instance: %s (not found: every tool call says what to do).", opts.Instance))
	tools.New(conn, u, tools.DefaultLimits, u).Register(server)
	err := serveTransport(ctx, opts.IO, log, server, &opts.HTTP)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// stager stages the working directory, or resumes its session, for tools.NewStaged: once at
// the start, and again at the next call after a failure.
type stager struct {
	conn *guest.Conn // the session's connection (plan.Conn())
	plan *sessionopen.Plan
	log  *slog.Logger
	opts staging.OpenOptions // without Progress; the plan gives the session and where it goes
	// networkRecorded says the plan's policy was recorded (at the first staging).
	networkRecorded bool
}

func (s *stager) open(ctx context.Context, progress func(staging.Progress)) (*staging.Session, error) {
	log := s.log
	// Back to "open": the agent's user hands the copy back first.
	if err := s.plan.Release(ctx); err != nil {
		log.Error("cannot end the session's network policy", "error", err)
		return nil, err
	}
	// Connect first, so that the staging time logged is the staging's own.
	t0 := time.Now()
	if _, err := s.conn.Home(ctx); err != nil {
		if shuttingDown(ctx, err) {
			log.Debug("staging not started: the server is shutting down")
			return nil, err
		}
		log.Error("cannot connect to the instance", "error", err)
		return nil, err
	}
	log.Debug("connected", "took", time.Since(t0).Round(time.Millisecond))
	start := time.Now()
	opts := s.opts
	opts.Progress = progressLogger(log, progress)
	sess, outcome, err := s.plan.OpenOrStage(ctx, opts)
	if err != nil {
		if shuttingDown(ctx, err) {
			log.Debug("staging stopped: the server is shutting down; it resumes at the next start", "error", err)
			return nil, err
		}
		log.Error("staging failed", "error", err)
		return nil, err
	}
	s.opts.Fresh = false // a retry after a failure must not discard again
	// Recorded once: a staging again after a failure must not undo a change made live since
	// (limactl mcp network INSTANCE allow ...).
	if !s.networkRecorded {
		if err := s.plan.RecordNetwork(sess); err != nil {
			return nil, fmt.Errorf("recording the session's network policy: %w", err)
		}
		s.networkRecorded = true
	}
	n, size := sess.Baseline.Files()
	log.Info("working directory "+string(outcome), "workdir", s.plan.Workdir, "session", staging.SessionLabel(s.plan.Session), "guest_path", sess.State.GuestPath,
		"files", n, "bytes", size, "took", time.Since(start).Round(time.Millisecond))
	return sess, nil
}

// shuttingDown says err comes from the server going away (its client closed the session), not
// from the instance: nothing a person needs to see.
func shuttingDown(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, guest.ErrClosed)
}

// progressLogger logs staging progress on stderr for trees that take a while, at most every 2
// seconds, and then the last step; a tree staged within 2 seconds logs no progress at all.
// It counts entries (files, directories and links), as staging sends them; the line that ends
// the staging counts files.
func progressLogger(log *slog.Logger, next func(staging.Progress)) func(staging.Progress) {
	last := time.Now()
	logged := false
	return func(p staging.Progress) {
		next(p)
		done := p.Files >= p.TotalFiles
		if time.Since(last) < 2*time.Second && (!done || !logged) {
			return
		}
		last, logged = time.Now(), true
		log.Info("staging", "entries", fmt.Sprintf("%d/%d", p.Files, p.TotalFiles),
			"MB", fmt.Sprintf("%.1f/%.1f", float64(p.Bytes)/1e6, float64(p.TotalBytes)/1e6),
			"MB/s", fmt.Sprintf("%.1f", p.Rate()/1e6))
	}
}

// sessionInstructions tells the agent which of the working directory's sessions it works in,
// so that it knows other agents may work on other copies of the same project ("" for the
// unnamed session, the only one most projects have).
func sessionInstructions(session string) string {
	if session == "" {
		return ""
	}
	return " Session: " + session + " (a staged copy of its own: other agents may work on other sessions of the same directory; a person reviews each session separately, and what they apply from another session shows up here as a change on the host side)."
}

// networkInstructions tells the agent its network policy, so that a refusal is no surprise.
func networkInstructions(network string) string {
	switch {
	case network == staging.OpenNetwork:
		return ""
	case network == "none":
		return " Network policy none (set by the person): commands cannot reach any host outside the VM; the VM's own loopback works."
	}
	return " Network policy " + network + " (set by the person): commands reach only these hosts, through the HTTP(S) proxy set in HTTP_PROXY/HTTPS_PROXY; other hosts, DNS and direct connections are refused. If a task needs another host, say so to the person."
}
