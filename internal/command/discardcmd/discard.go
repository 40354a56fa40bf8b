// Package discardcmd is what `limactl mcp discard` does: it removes a staged session, its
// guest copy (with any pending changes) and its state, after asking (or with --yes).
package discardcmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Options are the parsed command line of discard and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Session is --session: the session's name ("" or "default": the unnamed session).
	Session string
	// Yes discards without asking.
	Yes bool
	// AllBut is --all-but: keep this session and discard the other forks of its origin.
	AllBut string

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// Bounds on the steps of a discard that ask the runner, each sized for a 10,000-file copy on a
// fully emulated guest (a scan of it: a few seconds) with a wide margin: a runner that says
// nothing must not hold a discard for the runner calls' own deadlines (5 and 10 minutes).
// Past a bound the step is reported and the discard goes on (the copy is removed by plain
// ssh commands, without the runner).
var (
	countWait = 2 * time.Minute
	bgEndWait = time.Minute
)

// Run discards the session of the working directory.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	if opts.AllBut != "" {
		return runAllBut(ctx, opts)
	}
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "discard", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	wd, session := ref.Workdir, ref.Session
	// target is what the commands we suggest say after the verb: the instance, and the session.
	target := opts.Instance + ref.Flag()
	if !opts.Yes && !ios.IsStdinTTY() {
		// Said at once, before the instance is opened or the guest is reached: there is
		// nobody to ask, so nothing that follows could be used.
		return exitcode.With(exitcode.Pending, fmt.Errorf("this would discard the staged copy of %s, with every change in it not yet reviewed; pass --yes to confirm without a terminal: `limactl mcp discard %s --yes` (to see the changes first: `limactl mcp review %s --dry-run`)", describe(wd, session), target, target))
	}
	// On a terminal, the seconds spent connecting and counting the changes show progress.
	if ios.IsStdinTTY() || ios.IsStdoutTTY() {
		fmt.Fprintf(ios.ErrOut, "Connecting to %s… counting the changes in the staged copy of %s…\n", termsafe.String(opts.Instance), termsafe.String(wd))
	}
	t, s, err := ref.OpenSession(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	// Run in a subdirectory of a staged project, discard names the project and the exact
	// command, and discards nothing: removing a whole project's staged copy is never done on
	// a guess.
	if found := s.State.Workdir; found != wd {
		return fmt.Errorf("%s has no staged session of its own in instance %q: it is inside the staged project %s; to discard that project's staged copy, run `limactl mcp discard %s%s --workdir %s`", termsafe.String(wd), t.Instance.Name, termsafe.String(found), t.Instance.Name, ref.Flag(), termsafe.String(shellquote.Quote(found)))
	}
	workdir := s.State.Workdir
	what := "the staged copy of " + describe(workdir, session)
	// Under a network policy, the count and the end of the background processes go through a
	// runner started as the agent alone: its set-up (rules, proxy) would be undone at once by
	// the release that follows.
	conn, doneReading := t.ReadingConn(ctx, s.State)
	defer doneReading()
	read := staging.Attach(conn, t.Store, s.State, s.Baseline)
	var cs *staging.ChangeSet
	err = read.Within(ctx, countWait, "counting the pending changes", func(ctx context.Context) error {
		var err error
		cs, err = read.GuestChanges(ctx)
		return err
	})
	var werr *guest.WaitError
	switch {
	case errors.As(err, &werr):
		what += " (its pending changes could not be counted: " + werr.Error() + ")"
	case err == nil && len(cs.Changes) > 0:
		what += fmt.Sprintf(", with %s that will be lost", words.Count(len(cs.Changes), "pending change"))
	}
	if !opts.Yes {
		fmt.Fprintf(ios.ErrOut, "Discard %s? [y/N] ", what)
		yes, err := confirm(ctx, ios.In)
		if !yes {
			if err != nil {
				fmt.Fprintln(ios.ErrOut)
			}
			fmt.Fprintln(ios.ErrOut, "Nothing discarded.")
			return err
		}
	}
	stopped, err := discardSession(ctx, t, s, conn, ios.ErrOut)
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "Discarded %s%s.\n", what, stopped)
	return nil
}

// discardSession ends the session's background processes (through conn: Target.ReadingConn's),
// releases its agent user (under a network policy), and removes its copy, checkpoints and
// state. It returns what it stopped, for the closing line.
func discardSession(ctx context.Context, t *sessionopen.Target, s *staging.Session, conn *guest.Conn, errOut io.Writer) (string, error) {
	// The agent's background processes go with the session (every server's of it), through
	// a runner of the agent's (its agent user's, under a network policy).
	stopped := endBackground(ctx, conn, s.State.ID, errOut)
	if user := s.State.Network; user != "" && user != staging.OpenNetwork {
		// The agent's processes end, and its rules and policy go (its log stays for the
		// person), before its copy does: nothing of it keeps writing there.
		if err := staging.ReleaseAgent(ctx, t.Conn, s.State); err != nil {
			return "", err
		}
		// The copy is the Lima user's again: removed as that user.
		s = staging.Attach(t.Conn, t.Store, s.State, s.Baseline)
	}
	if err := s.Discard(ctx); err != nil {
		return "", err
	}
	return stopped, nil
}

// describe names the staged copy of workdir's session for a person: a named session by name.
func describe(workdir, session string) string {
	if session == "" {
		return workdir
	}
	return fmt.Sprintf("%s (session %s)", workdir, session)
}

// confirm reads a yes or no from in. Ctrl-C (ctx cancelled) answers no at once, with ctx's
// error, instead of waiting for a line: the read goes on in the background, and the
// process is about to exit.
func confirm(ctx context.Context, in io.Reader) (bool, error) {
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(in).ReadString('\n')
		answer <- line
	}()
	select {
	case line := <-answer:
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes", nil
	case <-ctx.Done():
		return false, exitcode.With(exitcode.Interrupted, ctx.Err())
	}
}
