// Package shellcmd is what `limactl mcp shell` does: it runs a command, or an interactive
// login shell, in the guest on the staged copy of the working directory (the session `serve`
// uses for that directory and instance), at the same absolute path, with a real PTY when it
// runs on a terminal; then it reviews what changed, with `review`'s own code. The command's
// exit status is ours.
package shellcmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/terminal"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/preview"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Options are the parsed command line of shell and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Session is --session: the session's name ("" or "default": the unnamed session).
	Session string
	// Command is the command to run (after INSTANCE); empty: an interactive login shell.
	Command []string
	// Shell is --shell: the guest shell to run (default: the guest user's login shell).
	Shell string
	// Env are the --env words: NAME (the host's value) or NAME=VALUE.
	Env []string
	// AgentEnv is --agent-env: pass AgentEnvNames that are set on the host.
	AgentEnv bool
	// Secrets are --secret and --agent-secrets: values kept on the host (docs/secrets.md).
	Secrets cmdutil.SecretFlags
	// Sync is --sync: bring host edits made since the last sync into a resumed copy first.
	Sync bool
	// Network is --network: the session's network policy ("": the one it holds, else open).
	Network        string
	Yes            bool
	NoReview       bool
	Accessible     bool
	Excludes       []string
	IncludeIgnored bool
	// Publish is --publish: the host address the command's dev servers are forwarded to
	// ("": 127.0.0.1).
	Publish string

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
	// LookupEnv reads the host's environment (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Terminal makes the way to the guest for the command (default: terminal.Open on
	// the instance's ssh target).
	Terminal func(inst *instance.Instance, log *slog.Logger) (*terminal.Terminal, error)
	// Review reviews the session once the command has run (default reviewcmd.Run).
	Review func(ctx context.Context, opts *reviewcmd.Options) error

	// redact are the values of the session's secrets, which the timeline never records
	// (set by Run once they are read).
	redact []string
	// loginScript writes the --login files into the guest before the command (secrets.Set.LoginScript).
	loginScript string
	// mark is the command's mark in its processes' environment (previews.go).
	mark string
}

// AgentEnvNames are the variables --agent-env passes when they are set on the host: what
// Claude Code, Codex, Gemini CLI and OpenCode read for their API keys and endpoints.
var AgentEnvNames = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL",
	"CLAUDE_CODE_OAUTH_TOKEN",
	"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "CODEX_HOME",
	"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_USE_VERTEXAI",
	"OPENROUTER_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY",
}

// DefaultTerm is the TERM of a PTY when the host's TERM is not set.
const DefaultTerm = "xterm-256color"

// Run runs the command in the guest and then the review, and returns the command's exit
// status (exitcode.With, silent) or why it could not run.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "shell", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	workdir, session := ref.Workdir, ref.Session
	if opts.Publish != "" {
		if _, err := preview.ParsePublish(opts.Publish); err != nil {
			return err // said before the VM is touched
		}
	}
	env, err := envToPass(opts, lookup)
	if err != nil {
		return err
	}
	// The secrets' values are read on the host before the VM is touched; a secret is never
	// also passed as a value (--env, --agent-env).
	secretSet, err := cmdutil.ResolveSecrets(ctx, opts.Secrets, lookup)
	if err != nil {
		return err
	}
	if secretSet != nil {
		env = withoutNames(env, secretSet.Names())
		opts.redact = secretSet.Values()
	}
	warnValuesEnterVM(ios.ErrOut, env)
	t, err := ref.OpenInstance(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	name := t.Instance.Name
	// reviewTarget is what the review commands we suggest say after `review`.
	reviewTarget := name + ref.Flag()
	if t.ConnErr != nil {
		return t.ConnErr
	}
	if mounts := t.Instance.Mounts(); len(mounts) > 0 {
		return fmt.Errorf("instance %q mounts host directories (%s): `limactl mcp shell` works on a staged copy, in an instance without mounts (`limactl mcp configure --create` makes one); on this instance use `limactl shell --workdir %s %s`",
			name, termsafe.String(strings.Join(mounts, ", ")), shellquote.Quote(workdir), name)
	}
	log := logger(ios.ErrOut)

	// The session: workdir's own or its staged project's (as review and sync find it), else
	// a new one, staged now.
	found, err := t.Find("shell", workdir, session)
	if err != nil {
		return err
	}
	sess, err := t.Session(found, session)
	var stored *staging.State
	if err == nil {
		stored = sess.State
	}
	plan, perr := t.PlanSession(found, session, stored, opts.Network)
	if perr != nil {
		return perr
	}
	if plan.PolicyFile != "" && plan.Changes() {
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: network policy %s from the project's policy file %s (no --network given)\n", plan.Net.Network, plan.PolicyFile)
	}
	if plan.Changes() {
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: the session's network policy changes from %s to %s\n", plan.Net.Previous, plan.Net.Network)
	}
	if _, err := cmdutil.WireSecrets(t, plan, secretSet, ios.ErrOut); err != nil {
		return err
	}
	// The logins' files, with the session's placeholders (made or taken by WireSecrets).
	loginScript, lerr := secretSet.LoginScript()
	if lerr != nil {
		return lerr
	}
	opts.loginScript = loginScript
	if rerr := plan.Release(ctx); rerr != nil {
		return rerr
	}
	if err == nil {
		// The session works as the plan's agent (its own guest user under a policy).
		sess = staging.Attach(plan.Conn(), t.Store, sess.State, sess.Baseline)
	}
	staged := false
	switch {
	case errors.Is(err, staging.ErrNoSession):
		if sess, err = stage(ctx, opts, t, plan, log); err != nil {
			return err
		}
		staged = true
	case err != nil:
		return err
	case opts.Sync:
		if err := syncHost(ctx, ios.ErrOut, sess); err != nil {
			return err
		}
	default:
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: resuming the staged copy of %s in %s; host edits since %s are not in it (--sync brings them in)\n",
			ref.Which(sess), name, sess.State.UpdatedAt.Local().Format("2006-01-02 15:04:05"))
	}
	if session != "" {
		// The one place a named session's relocation shows: the command runs in the guest, on
		// guest paths, without the tools' translation (docs/sessions.md).
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: session %s: its copy is at %s in the guest (a named session's copy cannot have the host's path, which the unnamed session's has)\n",
			session, termsafe.String(sess.State.GuestPath))
	}
	if opts.AgentEnv && !agentEnvSet(env) {
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: --agent-env: none of %s is set on the host\n", strings.Join(AgentEnvNames, ", "))
	}
	if len(env) > 0 {
		names := make([]string, len(env))
		for i, kv := range env {
			names[i], _, _ = strings.Cut(kv, "=")
		}
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: passing %s to the guest\n", strings.Join(names, ", "))
	}

	newTerminal := opts.Terminal
	if newTerminal == nil {
		newTerminal = func(inst *instance.Instance, log *slog.Logger) (*terminal.Terminal, error) {
			target, err := instance.TargetOf(inst)
			if err != nil {
				return nil, err
			}
			return terminal.Open(target, log), nil
		}
	}
	tm, err := newTerminal(t.Instance, log)
	if err != nil {
		return err
	}
	defer tm.Close()
	if plan.Net.Agent != nil {
		// The agent's user, its rules and its proxy are set up (again, after a VM restart)
		// before the command runs: the connection's setup does it.
		setup, err := sess.AgentSetup(ctx)
		if err != nil {
			return fmt.Errorf("network policy %s: %w", plan.Net.Network, err)
		}
		tm.AsAgent(plan.Net.Agent, setup)
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: network policy %s: the command runs as the guest user %s\n", plan.Net.Network, plan.Net.Agent.User)
	} else if secretSet != nil {
		// Under open: the secrets' environment (placeholders, the proxy, the CA) that the
		// session's connection wrote into the guest, which carries the proxy while the command
		// runs.
		envFile, err := plan.Conn().EnvFile(ctx)
		if err != nil {
			return fmt.Errorf("the secrets' proxy: %w", err)
		}
		tm.WithEnvFile(envFile)
	}
	if err := plan.RecordNetwork(sess); err != nil {
		return fmt.Errorf("recording the session's network policy: %w", err)
	}
	// The command's dev servers reach the host while it runs (previews.go).
	opts.mark = newMark()
	pv, err := startPreviews(plan.Conn(), t.Store, sess.State, session, opts.mark, opts.Publish, log)
	if err != nil {
		return err
	}
	previewsStopped := false
	stopPreviews := func() {
		if !previewsStopped {
			previewsStopped = true
			pv.Stop()
		}
	}
	defer stopPreviews()
	tty := ios.IsStdinTTY() && ios.IsStdoutTTY()
	termName := ""
	if tty {
		termName, _ = lookup("TERM")
		if termName == "" {
			termName = DefaultTerm
		}
	}
	run := func(sess *staging.Session) (terminal.ExitStatus, staging.ProbeResult, error) {
		guestDir, err := sess.Workspace().ToGuest(workdir)
		if err != nil {
			return 0, staging.ProbeResult{}, err
		}
		t0 := time.Now()
		status, probe, err := runCommand(ctx, tm, sess, guestDir, opts, env, tty, termName)
		log.Debug("command done", "via", tm.Via(), "status", status, "probe", probe, "took", time.Since(t0).Round(time.Millisecond))
		var lost errConnectionLost
		if errors.As(err, &lost) && ctx.Err() == nil {
			fmt.Fprintf(ios.ErrOut, "limactl-mcp: %v\nlimactl-mcp: nothing was applied to the host; what the command did until then stays in the guest copy: once %q runs again (`limactl list`), review it with `limactl mcp review %s --workdir %s`\n",
				lost, name, reviewTarget, termsafe.String(shellquote.Quote(workdir)))
			return 0, probe, exitcode.With(sshFailed, exitcode.ErrSilent)
		}
		if err != nil {
			if ctx.Err() != nil {
				return 0, probe, interrupted(ios.ErrOut, reviewTarget, workdir)
			}
			return 0, probe, fmt.Errorf("running the command in instance %q: %w", name, err)
		}
		return status, probe, nil
	}
	restage := func() error {
		// The guest copy is gone (a recreated instance, a cleared disk): stage again, as
		// serve does.
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: the staged copy of %s is gone from the guest; staging it again\n", termsafe.String(sess.State.Workdir))
		sess, err = stage(ctx, opts, t, plan, log)
		return err
	}
	// On a terminal the script's lines cannot be told from the command's: whether the copy is
	// there is known first, through the host's own connection (a copy staged just now is).
	checkedFirst := tty
	if tty && !staged {
		present, perr := sess.CopyPresent(ctx)
		if perr != nil {
			return perr
		}
		if !present {
			if err := restage(); err != nil {
				return err
			}
		}
	}
	status, probe, err := run(sess)
	if err != nil {
		return err
	}
	if status == staging.CopyGoneStatus && !probe.CopyPresent {
		if probe.Ran || checkedFirst {
			// The copy was there and the command started: it (or something meanwhile) removed
			// the session's marker. It is not run a second time.
			fmt.Fprintf(ios.ErrOut, "limactl-mcp: the session's marker is gone from the guest after the command started (exit %d): the command is not run again; nothing was applied to the host, and the next command that opens this session stages %s again from the host\n",
				status, termsafe.String(sess.State.Workdir))
			return exitcode.With(int(status), exitcode.ErrSilent)
		}
		// The command did not run: stage again, and run it.
		if err := restage(); err != nil {
			return err
		}
		if status, probe, err = run(sess); err != nil {
			return err
		}
	}
	stopPreviews() // the command has ended; the review needs no forwards
	done := exitcode.With(int(status), exitcode.ErrSilent)
	if status == 0 {
		done = nil
	}
	if ctx.Err() != nil {
		return interrupted(ios.ErrOut, reviewTarget, workdir)
	}
	reviewCmd := "limactl mcp review " + reviewTarget
	if sess.State.Workdir != workdir {
		reviewCmd += " --workdir " + shellquote.Quote(sess.State.Workdir)
	}
	// "Unchanged" from the probe is the command's to forge: the runner's scan decides.
	if !probe.Changed && sess.Unchanged(ctx) {
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: the command changed nothing in the staged copy: nothing is pending (`%s`)\n", termsafe.String(reviewCmd))
		return done
	}
	if opts.NoReview {
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: the changes stay pending in the guest copy; review them with `%s`\n", termsafe.String(reviewCmd))
		return done
	}
	return review(ctx, opts, t, workdir, session, status, done)
}

// review reviews the session: on a terminal, the interactive review; with --yes, every change
// that is not a conflict; otherwise the summary and the command to run, with no write. What it
// prints goes to stderr unless the review is interactive: stdout is the command's.
func review(ctx context.Context, opts *Options, t *sessionopen.Target, workdir, session string, status terminal.ExitStatus, done error) error {
	ios := opts.IO
	rios := ios
	if opts.Yes || !(ios.IsStdinTTY() && ios.IsStdoutTTY()) {
		rios = &iostreams.IOStreams{In: ios.In, Out: ios.ErrOut, ErrOut: ios.ErrOut}
	}
	run := opts.Review
	if run == nil {
		run = reviewcmd.Run
	}
	ropts := &reviewcmd.Options{
		IO: rios, Instance: t.Instance.Name, Workdir: workdir, Session: session, Yes: opts.Yes, Accessible: opts.Accessible,
		// The instance is open already: the review goes on with it.
		Open: func(context.Context, string) (*sessionopen.Target, error) { return t, nil },
	}
	// The exit status is the command's. A review that explained itself on stderr (no
	// terminal: the summary and the command to run; an abort; changes it could not apply)
	// does not change it; an error of the review does when the command succeeded.
	err := run(ctx, ropts)
	switch {
	case err == nil, errors.Is(err, exitcode.ErrSilent):
		return done
	case status != 0:
		fmt.Fprintf(ios.ErrOut, "limactl-mcp: review: %v\n", err)
		return done
	}
	return err
}

// interrupted is the error of a run that was interrupted (SIGINT or SIGTERM to us): the guest
// copy keeps what the command did, the host is untouched.
func interrupted(w io.Writer, name, workdir string) error {
	fmt.Fprintf(w, "limactl-mcp: interrupted: nothing was applied to the host; what the command did stays in the guest copy, pending review (`limactl mcp review %s --workdir %s`)\n", name, termsafe.String(shellquote.Quote(workdir)))
	return exitcode.With(exitcode.Interrupted, exitcode.ErrSilent)
}

// runCommand runs the command once on sess, and finds out whether it changed the guest copy
// (see staging.Probe): without a terminal, in the same session, after the command, on stderr
// (which a probeFilter reads); with one, or when the script did not get that far, in a session
// of its own. When it cannot tell, the result says "changed", so that the review looks.
func runCommand(ctx context.Context, tm *terminal.Terminal, sess *staging.Session, guestDir string, opts *Options, env []string, tty bool, termName string) (terminal.ExitStatus, staging.ProbeResult, error) {
	ios := opts.IO
	probe := sess.NewProbe()
	req := terminal.Request{TTY: tty, Term: termName, Stdin: ios.In, Stdout: ios.RawOut(), Stderr: ios.RawErrOut()} // the command's own terminal, as `limactl shell` gives it
	var filter *probeFilter
	after := ""
	if !tty {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		prefix := "\x1elimactl-mcp-probe-" + hex.EncodeToString(b) + ":"
		filter = newProbeFilter(ios.RawErrOut(), prefix)
		req.Stderr = filter
		after = probe.InBand(prefix)
	}
	prefix := ""
	if filter != nil {
		prefix = filter.prefix
	}
	req.Script = sess.CheckCopyScript(prefix) + probe.Start() + opts.loginScript + commandScript(guestDir, opts.Shell, opts.Command, env, tty, after, opts.mark)
	switch {
	case len(env) > 0 && !tty:
		// The values, first on the command's standard input (envfile.go).
		end := "__lmcp_env_end_" + envDirName()
		req.Script = envStdinScript(end) + req.Script
		in := io.Reader(bytes.NewReader(envStdinContent(env, end)))
		if ios.In != nil {
			in = io.MultiReader(in, ios.In)
		}
		req.Stdin = in
	case len(env) > 0:
		// With a PTY: on the standard input of a session of their own, into a file the
		// command's script reads first and removes (envfile.go).
		out, err := tm.Input(ctx, envWriteScript(envDirName()), envFileContent(env))
		if err != nil {
			return 0, staging.ProbeResult{CopyPresent: true}, fmt.Errorf("passing the values of --env to the guest: %w", err)
		}
		p, err := parseEnvFilePath(out)
		if err != nil {
			return 0, staging.ProbeResult{CopyPresent: true}, fmt.Errorf("passing the values of --env to the guest: %w", err)
		}
		req.Script = envReadScript(p) + req.Script
	}
	t0 := time.Now()
	status, err := tm.Run(ctx, req)
	recordCommand(sess, opts, guestDir, env, t0, status, err) // timeline.go
	if err != nil {
		return 0, staging.ProbeResult{CopyPresent: true, Changed: true}, err
	}
	if filter != nil {
		if lines := filter.Lines(); len(lines) > 0 {
			r := staging.ParseProbe(lines)
			if r.CopyPresent || status != sshFailed {
				return status, r, nil
			}
			// The probe stopped short with ssh's 255: the command removed the marker, or the
			// guest went away under it (the VM stopped). Only a guest that answers says which.
			if _, err := tm.Output(ctx, "true"); err != nil {
				return status, staging.ProbeResult{CopyPresent: true, Changed: true, Ran: r.Ran}, errConnectionLost{err}
			}
			return status, r, nil
		}
	}
	out, err := tm.Output(ctx, probe.After(time.Since(t0)))
	if err != nil {
		if status == sshFailed {
			// ssh's own failure, most likely: the guest is gone (the VM stopped) or the
			// connection broke. The command's work so far is in the guest copy.
			return status, staging.ProbeResult{CopyPresent: true, Changed: true}, errConnectionLost{err}
		}
		return status, staging.ProbeResult{CopyPresent: true, Changed: true}, nil
	}
	return status, staging.ParseProbe(strings.Split(out, "\n")), nil
}

// sshFailed is the status ssh exits with when it fails itself (and a command's own 255).
const sshFailed = 255

// errConnectionLost: the command ended with ssh's 255 and the guest no longer answers.
type errConnectionLost struct{ err error }

func (e errConnectionLost) Error() string {
	return "the connection to the guest was lost: " + e.err.Error()
}

// stage stages the planned session into the guest (or resumes or restages it), with progress
// on stderr.
func stage(ctx context.Context, opts *Options, t *sessionopen.Target, plan *sessionopen.Plan, log *slog.Logger) (*staging.Session, error) {
	w := opts.IO.ErrOut
	workdir := plan.Workdir
	fmt.Fprintf(w, "limactl-mcp: staging %s into instance %s…\n", termsafe.String(workdir), t.Instance.Name)
	// Progress for trees that take a while: at most every 2 seconds, and the last step once
	// some was shown.
	last, shown := time.Now(), false
	sess, outcome, err := plan.OpenOrStage(ctx, staging.OpenOptions{
		Instance: t.Instance.Name, Logger: log,
		Select: staging.SelectOptions{Excludes: opts.Excludes, IncludeIgnored: opts.IncludeIgnored},
		Progress: func(p staging.Progress) {
			if time.Since(last) < 2*time.Second && (p.Files < p.TotalFiles || !shown) {
				return
			}
			last, shown = time.Now(), true
			fmt.Fprintf(w, "limactl-mcp: staging: %d/%d entries, %.1f/%.1f MB\n", p.Files, p.TotalFiles, float64(p.Bytes)/1e6, float64(p.TotalBytes)/1e6)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("staging %s: %w", termsafe.String(workdir), err)
	}
	n, size := sess.Baseline.Files()
	fmt.Fprintf(w, "limactl-mcp: %s %s (%s, %.1f MB) at %s in the guest\n", outcome, termsafe.String(workdir), words.Count(n, "file"), float64(size)/1e6, termsafe.String(sess.State.GuestPath))
	return sess, nil
}

// syncHost brings host edits into the guest copy (--sync), as `limactl mcp sync` does.
func syncHost(ctx context.Context, w io.Writer, sess *staging.Session) error {
	rep, err := sess.Sync(ctx)
	if err != nil {
		return fmt.Errorf("bringing host edits into the guest copy: %w", err)
	}
	fmt.Fprintf(w, "limactl-mcp: copied %s into the guest and removed %s the host deleted\n", words.Count(len(rep.Pushed), "host change"), words.Count(len(rep.Removed), "path"))
	for _, p := range rep.Conflicts {
		fmt.Fprintf(w, "limactl-mcp: conflict: %s changed on both sides; the guest's version is kept\n", termsafe.Path(string(p)))
	}
	return nil
}

func logger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("LIMACTL_MCP_DEBUG") == "1" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
