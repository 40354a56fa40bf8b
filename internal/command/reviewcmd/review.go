// Package reviewcmd is what `limactl mcp review` does: it builds the changeset of the staged
// session of a working directory, gets the decisions (--yes, or a person on a terminal), and
// applies them to the host; or prints the changeset (--json, --patch, --dry-run), or undoes
// the last apply (--undo).
package reviewcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/command/networkcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netwatch"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/review/tui"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

// Options are the parsed command line of a review and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Session is --session: the session's name ("" or "default": the unnamed session).
	Session string
	// Paths limit the review to these paths (relative ones to the current directory).
	Paths []string

	Yes        bool
	DryRun     bool
	Patch      bool
	JSON       bool
	Accessible bool
	Undo       bool
	// Since shows what changed in the guest copy since this checkpoint (read-only).
	Since string
	// Compare is --compare: the sessions whose changes are compared and picked from (the
	// first is the one applied through, compare.go).
	Compare []string

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
	// Decide asks a person on the terminal what to apply; ErrAborted when they abort
	// (default: the interactive review, see tui.go).
	Decide func(cs *review.Changeset) ([]review.Decision, error)
	// DecideCompare asks a person what to take of a compare; ErrAborted when they abort
	// (default: the compare mode of the review's TUI).
	DecideCompare func(c *review.Compared) ([]review.Pick, error)
	// ReadRecord reads the agent's network record for the interactive review's "w" (nil:
	// networkcmd.ReadRecord, root's runner through the instance's connection).
	ReadRecord networkcmd.RecordReader
}

// Run runs a review.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	if opts.Compare != nil {
		return runCompare(ctx, opts)
	}
	phases := cmdutil.NewPhases(ios.ErrOut, "review")
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "review", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	workdir, session := ref.Workdir, ref.Session
	// The paths are checked before the instance is opened; they are made relative to the
	// session's working directory once it is found (it may hold workdir).
	for _, p := range opts.Paths {
		if _, err := workdirpath.Rel(workdir, p); err != nil {
			return err
		}
	}
	// Every wait on a terminal shows progress: opening the instance, connecting and reading
	// the agent's changes take seconds.
	progress := ios.IsStdoutTTY() && !opts.JSON && !opts.Patch
	if progress {
		inst := "the instance"
		if opts.Instance != "" {
			inst = termsafe.String(opts.Instance)
		}
		fmt.Fprintf(ios.ErrOut, "Connecting to %s… ", inst)
	}
	t, sess, err := ref.OpenSession(ctx)
	if err != nil {
		if progress {
			fmt.Fprintln(ios.ErrOut)
		}
		return err
	}
	defer t.Close()
	phases.Done("opened the instance and the session")
	// name is what the commands we suggest say after `review`: the instance, and the session.
	name := t.Instance.Name + ref.Flag()
	if !progress && ref.Inside(sess) {
		fmt.Fprintf(ios.ErrOut, "Reviewing %s, instance %s.\n", ref.Which(sess), termsafe.String(name))
	}
	var paths []string
	for _, p := range opts.Paths {
		rel, err := workdirpath.Rel(sess.State.Workdir, p)
		if err != nil {
			return err
		}
		paths = append(paths, rel)
	}
	// A review that may apply writes through sess, whose agent's set-up (under a network
	// policy: seconds on an emulated guest) goes on beside the reading (--yes) or while the
	// person reads; what the person reads is read through read, which does not wait for it
	// (Target.ReadingSession).
	applies := !opts.JSON && !opts.Patch && !opts.DryRun && (opts.Yes || ios.IsStdinTTY() && ios.IsStdoutTTY())
	if applies && opts.Yes && opts.Since == "" && !opts.Undo {
		go func() { _, _ = sess.AgentSetup(ctx) }()
	}
	if opts.Since != "" {
		read, done := t.ReadingSession(ctx, sess)
		defer done()
		return runSince(ctx, opts, read, paths)
	}
	// One review at a time applies (or undoes); printing the changeset needs no lock.
	if opts.Undo || applies {
		unlock, err := sess.Store().ReviewLock(sess.State.ID)
		if err != nil {
			if progress {
				fmt.Fprintln(ios.ErrOut)
			}
			return busyError(err, name, sess.State.Workdir)
		}
		defer unlock()
	}
	if opts.Undo {
		if progress {
			fmt.Fprintf(ios.ErrOut, "undoing the last apply to %s…\n", ref.Which(sess))
		}
		rep, err := review.Undo(ctx, sess)
		recordApply(sess, timeline.Undo, rep, err)
		if err != nil {
			return err
		}
		fmt.Fprintf(ios.Out, "Restored %s from the last apply", words.Count(len(rep.Written), "path"))
		if len(rep.Written) > 0 {
			fmt.Fprint(ios.Out, ":")
		} else {
			fmt.Fprint(ios.Out, ".")
		}
		fmt.Fprintln(ios.Out)
		for _, w := range rep.Written {
			fmt.Fprintf(ios.Out, "  restored %s\n", termsafe.String(w))
		}
		printRefused(ios.Out, rep.Refused)
		return nil
	}
	if progress {
		fmt.Fprintf(ios.ErrOut, "reading the agent's changes to %s…\n", ref.Which(sess))
	}
	if rep, rolled, err := review.RecoverInterrupted(sess); err != nil {
		return err
	} else if rolled {
		fmt.Fprintln(ios.ErrOut, "An earlier apply was interrupted: what it had written was rolled back.")
		printRefused(ios.ErrOut, rep.Refused)
	}
	phases.Done("checked for an interrupted apply")
	// What the agent did on the network is part of what the person reviews: its record is
	// read (a sudo in the guest) beside the changeset's build, through the Lima user's
	// connection; the changeset through read, while sess may still be setting its agent up.
	networkReport := sess.StartNetworkReport(ctx, t.Conn)
	read, doneReading := t.ReadingSession(ctx, sess)
	defer doneReading()
	cs, err := review.Build(ctx, read, paths)
	if err != nil {
		return err
	}
	phases.Done(fmt.Sprintf("built the changeset (%d items)", len(cs.Items)))
	network := networkReport(read)
	// And how its requests used the session's secrets (none: nothing is shown).
	uses, requests := secrets.Summaries(sess.Store().SessionDir(sess.State.ID))
	// And which calls produced each change (the session's timeline).
	tl, err := review.Attribute(read, cs, time.Now())
	if err != nil {
		fmt.Fprintf(ios.ErrOut, "warning: the session's timeline cannot be read, so no change says which call made it: %v\n", err)
	}
	phases.Done("read the network record, the secrets' uses and the timeline")
	switch {
	case opts.JSON:
		enc := json.NewEncoder(ios.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(changesetJSON(cs, session, network, uses, requests, tl))
	case opts.Patch:
		_, err := io.WriteString(ios.Out, review.Patch(cs))
		return err
	}
	if network.Policy != staging.OpenNetwork && !opts.Patch {
		fmt.Fprintln(ios.Out, termsafe.String(capitalize(network.Line())+"."))
	}
	for _, line := range review.SecretsLines(uses, requests) {
		fmt.Fprintln(ios.Out, line)
	}
	if len(cs.Items) == 0 {
		fmt.Fprintln(ios.Out, nothingToReview(ctx, read, paths, name))
		printIgnored(ios.Out, cs)
		return nil
	}
	notice := ""
	if network.Policy != staging.OpenNetwork {
		notice = termsafe.String(capitalize(network.Line()) + ".")
	}
	if line := timelineNotice(tl, name); line != "" {
		notice = strings.TrimPrefix(notice+"\n"+line, "\n")
	}
	topts := tui.Options{Accessible: opts.Accessible, Notice: notice, Secrets: uses, Requests: requests, Timeline: tl}
	if network.Policy == staging.OpenNetwork {
		topts.NoWatch = "The session's network policy is open: nothing is refused, so there is nothing to watch. Put the agent under a policy by restarting its server with one (limactl mcp serve --network=none" + ref.Flag() + ", or --network=allow:@go,example.com); then its refused destinations show here."
	} else {
		src := networkcmd.WatchSource(t, sess.State, ref.Flag(), opts.ReadRecord, nil, netwatch.DefaultInterval)
		topts.Watch = &src
	}
	phases.Done("ready to ask (the terminal's review, or --yes)")
	if applies && !opts.Yes {
		// The person reads for seconds: the set-up goes on meanwhile, not beside the reading
		// (on a 2-vCPU emulated guest they slowed each other: the first screen came 1 s later).
		go func() { _, _ = sess.AgentSetup(ctx) }()
	}
	decisions, err := decide(opts, name, cs, paths, topts)
	if topts.Watch != nil && topts.Watch.End != nil {
		topts.Watch.End(ctx) // the w screen's watch, if it was opened
	}
	if err != nil {
		return err
	}
	planned, err := review.Plan(cs, decisions)
	if err != nil {
		return err
	}
	if opts.DryRun {
		printSummary(ios.Out, cs)
		fmt.Fprintln(ios.Out, "\nWith --yes, this would:")
		for _, p := range planned {
			fmt.Fprintf(ios.Out, "  %-40s %s\n", termsafe.String(p.Path), termsafe.String(p.What))
		}
		printConflicts(ios.Out, cs, name)
		return nil
	}
	if progress {
		fmt.Fprintf(ios.ErrOut, "Applying to %s…\n", termsafe.String(sess.State.Workdir))
	}
	rep, err := review.Apply(ctx, sess, cs, decisions)
	recordApply(sess, timeline.Apply, rep, err)
	if err != nil {
		return err
	}
	if len(rep.Written) == 0 && len(rep.Guest) == 0 {
		// Nothing changed anywhere: say so, and offer no undo (there is nothing to undo).
		fmt.Fprintf(ios.Out, "Nothing was applied: the host and the guest are as they were")
		if n := len(rep.Pending) + len(rep.Refused); n > 0 {
			fmt.Fprintf(ios.Out, "; %s pending", words.Count(n, "change stays", "changes stay"))
		}
		fmt.Fprintln(ios.Out, ".")
	} else {
		fmt.Fprintf(ios.Out, "Applied: %s written on the host", words.Count(len(rep.Written), "path"))
		if len(rep.Guest) > 0 {
			fmt.Fprintf(ios.Out, ", %d set in the guest", len(rep.Guest))
		}
		if len(rep.Written) > 0 {
			fmt.Fprintf(ios.Out, ". Undo with `limactl mcp review %s --undo`.\n", name)
		} else {
			fmt.Fprintln(ios.Out, ". Nothing on the host changed, so there is nothing to undo.")
		}
	}
	if rep.Checkpoint != "" && (len(rep.Written) > 0 || len(rep.Guest) > 0) {
		fmt.Fprintf(ios.ErrOut, "The guest copy as reviewed is checkpoint %s (`limactl mcp restore %s %s%s`).\n", rep.Checkpoint, name, rep.Checkpoint, ref.Flag())
	}
	if rep.CheckpointError != "" {
		fmt.Fprintf(ios.ErrOut, "warning: no checkpoint of the guest copy was taken before the apply: %s\n", termsafe.String(rep.CheckpointError))
	}
	for _, w := range rep.Written {
		mark := ""
		if what := review.SetsPolicy(w); what != "" {
			mark = "  [SETS AGENT POLICY: " + what + "]"
		}
		fmt.Fprintf(ios.Out, "  wrote   %s%s\n", termsafe.String(w), mark)
	}
	for _, g := range rep.Guest {
		fmt.Fprintf(ios.Out, "  guest   %s\n", termsafe.String(g))
	}
	printRefused(ios.Out, rep.Refused)
	if opts.Yes {
		printConflicts(ios.Out, cs, name)
	}
	if len(rep.Refused) > 0 {
		fmt.Fprintf(ios.ErrOut, "%s not be applied and %s pending: run `limactl mcp review %s` again once the reason above is settled.\n", words.Count(len(rep.Refused), "change could", "changes could"), map[bool]string{true: "stays", false: "stay"}[len(rep.Refused) == 1], name)
		return exitcode.With(exitcode.Error, exitcode.ErrSilent)
	}
	return nil
}

// nothingToReview is what a review with no change of the agent's says: that, and what it
// knows of the host's side (a review has no change to show, yet the host may have edits the
// guest copy lacks): none (the staged copy matches the host), how many and the sync that
// brings them in, or that it could not tell.
func nothingToReview(ctx context.Context, sess *staging.Session, paths []string, name string) string {
	line := "Nothing to review: the agent changed nothing"
	if len(paths) > 0 {
		line += " under the paths given"
	}
	hostCS, err := staging.HostChanges(ctx, sess.State, sess.Baseline)
	if err != nil {
		return line + termsafe.String(fmt.Sprintf(" (whether the host changed since the copy was staged is unknown: %v).", err))
	}
	n := 0
	for _, c := range hostCS.Changes {
		if len(paths) == 0 || tree.WithinAny(paths, string(c.Path)) {
			n++
		}
	}
	if n == 0 && len(paths) > 0 {
		return line + ", and there the staged copy matches the host."
	}
	if n == 0 {
		return line + " and the staged copy matches the host."
	}
	them := "them"
	if n == 1 {
		them = "it"
	}
	return fmt.Sprintf("%s; %s not in the guest copy: `limactl mcp sync %s` brings %s in.", line, words.Count(n, "host edit is", "host edits are"), name, them)
}

// busyError is the error of a review that found another one holding the session's lock: who
// holds it, and what to do.
func busyError(err error, instance, workdir string) error {
	var busy *staging.ReviewBusyError
	if !errors.As(err, &busy) {
		return err
	}
	who := "another review"
	stuck := ""
	if busy.PID > 0 {
		who = fmt.Sprintf("another review (pid %d)", busy.PID)
		stuck = fmt.Sprintf(" (if that review is stuck, end it with `kill %d`)", busy.PID)
	}
	return fmt.Errorf("%s is open on %s: nothing was applied. Finish or abort that review first%s, then run `limactl mcp review %s` again", who, termsafe.String(workdir), stuck, instance)
}

// decide gets the decisions for a changeset with items. --yes and --dry-run accept every
// change that is not a conflict; otherwise a person decides on a terminal; without one,
// nothing is applied and the exit code says consent is pending.
func decide(opts *Options, instance string, cs *review.Changeset, paths []string, topts tui.Options) ([]review.Decision, error) {
	ios := opts.IO
	switch {
	case opts.Yes || opts.DryRun:
		return AcceptNonConflicts(cs, paths...), nil
	case ios.IsStdinTTY() && ios.IsStdoutTTY():
		ask := opts.Decide
		if ask == nil {
			ask = func(cs *review.Changeset) ([]review.Decision, error) {
				return interactive(cs, ios, topts)
			}
		}
		decisions, err := ask(cs)
		if errors.Is(err, ErrAborted) {
			fmt.Fprintln(ios.ErrOut, "Aborted: nothing was applied, host and guest are untouched.")
			return nil, exitcode.With(exitcode.Error, exitcode.ErrSilent)
		}
		return decisions, err
	default:
		printSummary(ios.Out, cs)
		fmt.Fprintln(ios.Out, "\nNo terminal: nothing was applied. Run `limactl mcp review "+instance+"` in a terminal, or `limactl mcp review "+instance+" --yes` to apply every change that is not a conflict (--dry-run shows what that would do, --patch prints a diff).")
		return nil, exitcode.With(exitcode.Pending, exitcode.ErrSilent)
	}
}

// AcceptNonConflicts is the policy of --yes: accept every change that is neither a conflict
// nor refused, skip the conflicts (they stay pending), and leave refused changes undecided.
// Of a collision (guest names that are one name on the host), the name that named (the PATH
// arguments) gives exactly, without the others, is taken, unless the host changed it too:
// naming one is the person's choice; otherwise every name of it stays pending.
func AcceptNonConflicts(cs *review.Changeset, named ...string) []review.Decision {
	isNamed := map[string]bool{}
	for _, p := range named {
		isNamed[p] = true
	}
	picked := func(it *review.Item) bool {
		if len(it.Collides) == 0 || !isNamed[it.Path] || it.HostChanged() {
			return false
		}
		for _, o := range it.Collides {
			if isNamed[o] {
				return false
			}
		}
		return true
	}
	var ds []review.Decision
	for _, it := range cs.Items {
		switch {
		case it.Refused != "":
		case picked(it):
			ds = append(ds, review.Decision{Path: it.Path, Action: review.TakeGuest})
		case it.Conflict:
			ds = append(ds, review.Decision{Path: it.Path, Action: review.Skip})
		default:
			ds = append(ds, review.Decision{Path: it.Path, Action: review.Accept})
		}
	}
	return ds
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
