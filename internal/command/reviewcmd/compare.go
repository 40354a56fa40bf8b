package reviewcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/review/tui"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

// maxCompared bounds the sessions of one compare (a version is named by a letter, and each is
// a changeset held in memory).
const maxCompared = 8

// runCompare is `review --compare S1,S2[,…]`: the sessions' changes side by side, a pick per
// path (a version, hunks of several, or none), and one apply of the picks through the first
// session, with review's checks, backups and undo.
func runCompare(ctx context.Context, opts *Options) error {
	ios := opts.IO
	for flag, set := range map[string]bool{"--session": opts.Session != "", "--yes": opts.Yes, "--dry-run": opts.DryRun, "--patch": opts.Patch, "--json": opts.JSON, "--undo": opts.Undo, "--since": opts.Since != ""} {
		if set {
			return fmt.Errorf("--compare and %s cannot be used together: a compare is chosen on a terminal (undo it with `review --session FIRST --undo`)", flag)
		}
	}
	names, err := cmdutil.Sessions{Verb: "review", Flag: "--compare", Names: opts.Compare, Max: maxCompared}.Parse()
	if err != nil {
		return err
	}
	labels := make([]string, len(names))
	for i, name := range names {
		labels[i] = staging.SessionLabel(name)
	}
	if opts.DecideCompare == nil && !(ios.IsStdinTTY() && ios.IsStdoutTTY()) {
		return exitcode.With(exitcode.Pending, fmt.Errorf("review --compare is chosen on a terminal, and there is none: nothing was applied. `limactl mcp compare %s %s` prints the comparison", termsafe.String(opts.Instance), termsafe.String(strings.Join(labels, " "))))
	}
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "review", Instance: opts.Instance, Workdir: opts.Workdir, Session: names[0], Open: opts.Open})
	if err != nil {
		return err
	}
	for _, p := range opts.Paths {
		if _, err := workdirpath.Rel(ref.Workdir, p); err != nil {
			return err
		}
	}
	t, sessions, err := ref.OpenCompared(ctx, names[1:])
	if err != nil {
		return err
	}
	defer t.Close()
	first := sessions[0]
	workdir := first.State.Workdir
	instance := t.Instance.Name
	var paths []string
	for _, p := range opts.Paths {
		rel, err := workdirpath.Rel(workdir, p)
		if err != nil {
			return err
		}
		paths = append(paths, rel)
	}
	// No review of any of them applies meanwhile: the apply goes through the first, and the
	// others' versions are read as they were compared.
	for i, s := range sessions {
		unlock, err := s.Store().ReviewLock(s.State.ID)
		if err != nil {
			return busyError(err, instance+staging.SessionFlag(names[i]), workdir)
		}
		defer unlock()
	}
	if rep, rolled, err := review.RecoverInterrupted(first); err != nil {
		return err
	} else if rolled {
		fmt.Fprintln(ios.ErrOut, "An earlier apply was interrupted: what it had written was rolled back.")
		printRefused(ios.ErrOut, rep.Refused)
	}
	if ios.IsStdoutTTY() {
		fmt.Fprintf(ios.ErrOut, "reading the changes of %s…\n", termsafe.String(joinNames(labels)))
	}
	// The changes are read through reading sessions (under a policy, each agent's runner
	// without its set-up: Target.ReadingSession), all at once; the apply goes through the
	// first session's own connection, whose set-up goes on while the person picks.
	read, doneReading := t.ReadingSessions(ctx, sessions)
	defer doneReading()
	c, err := review.BuildCompared(ctx, read, labels, paths)
	if err != nil {
		return err
	}
	if len(c.Paths) == 0 {
		fmt.Fprintf(ios.Out, "Nothing to compare: none of %s changed anything.\n", termsafe.String(joinNames(labels)))
		return nil
	}
	go func() { _, _ = first.AgentSetup(ctx) }()
	// What each agent did on the network, and how its requests used its session's secrets, is
	// part of what the person weighs: a block per session, each line named.
	// (The confirmation of the TUI shows the secrets' lines again: the TUI takes the screen.)
	var uses []string
	for i, s := range sessions {
		if network := s.NetworkReport(ctx, nil); network.Policy != staging.OpenNetwork {
			fmt.Fprintln(ios.Out, termsafe.String("Session "+labels[i]+": "+network.Line()+"."))
		}
		for _, l := range review.SecretsLines(secrets.Summaries(s.Store().SessionDir(s.State.ID))) {
			l = termsafe.String("Session "+labels[i]+": ") + l
			uses = append(uses, l)
			fmt.Fprintln(ios.Out, l)
		}
	}
	ask := opts.DecideCompare
	if ask == nil {
		ask = func(c *review.Compared) ([]review.Pick, error) {
			picks, err := tui.RunCompare(c, ios.In, ios.RawOut(), tui.Options{Accessible: opts.Accessible, SessionSecrets: uses})
			if errors.Is(err, tui.ErrAborted) {
				return nil, ErrAborted
			}
			return picks, err
		}
	}
	picks, err := ask(c)
	if errors.Is(err, ErrAborted) {
		fmt.Fprintln(ios.ErrOut, "Aborted: nothing was applied, host and guests are untouched.")
		return exitcode.With(exitcode.Error, exitcode.ErrSilent)
	}
	if err != nil {
		return err
	}
	cs, ds, err := c.Merge(picks)
	if err != nil {
		return err
	}
	if ios.IsStdoutTTY() {
		fmt.Fprintf(ios.ErrOut, "Applying to %s…\n", termsafe.String(workdir))
	}
	rep, err := review.Apply(ctx, first, cs, ds)
	recordApply(first, timeline.Apply, rep, err)
	if err != nil {
		return err
	}
	name := instance + staging.SessionFlag(names[0])
	if len(rep.Written) == 0 {
		fmt.Fprintln(ios.Out, "Nothing was applied: the host is as it was.")
	} else {
		fmt.Fprintf(ios.Out, "Applied: %s written on the host, through session %s. Undo with `limactl mcp review %s --undo`.\n", words.Count(len(rep.Written), "path"), termsafe.String(labels[0]), name)
	}
	for _, w := range rep.Written {
		fmt.Fprintf(ios.Out, "  wrote   %s\n", termsafe.String(w))
	}
	printRefused(ios.Out, rep.Refused)
	if len(rep.Refused) > 0 {
		fmt.Fprintf(ios.ErrOut, "%s not be applied: run `limactl mcp review %s --compare %s` again once the reason above is settled.\n", words.Count(len(rep.Refused), "change could", "changes could"), termsafe.String(instance), termsafe.String(joinNames(labels)))
		return exitcode.With(exitcode.Error, exitcode.ErrSilent)
	}
	if len(rep.Written) > 0 {
		fmt.Fprintf(ios.Out, "The sessions are as they were: keep one and discard the others with `limactl mcp discard %s --all-but NAME`.\n", termsafe.String(instance))
	}
	return nil
}

// joinNames is names as --compare takes them.
func joinNames(names []string) string { return strings.Join(names, ",") }
