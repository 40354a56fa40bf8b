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

	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

// Options are the parsed command line of a review and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Paths limit the review to these paths (relative ones to the current directory).
	Paths []string

	Yes        bool
	DryRun     bool
	Patch      bool
	JSON       bool
	Accessible bool
	Undo       bool

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
	// Decide asks a person on the terminal what to apply; ErrAborted when they abort
	// (default: the interactive review, see tui.go).
	Decide func(cs *review.Changeset) ([]review.Decision, error)
}

// Run runs a review.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	workdir, err := workdirpath.Resolve(opts.Workdir)
	if err != nil {
		return err
	}
	var paths []string
	for _, p := range opts.Paths {
		rel, err := workdirpath.Rel(workdir, p)
		if err != nil {
			return err
		}
		paths = append(paths, rel)
	}
	open := opts.Open
	if open == nil {
		open = sessionopen.HostOpener(ios.ErrOut)
	}
	t, sess, err := sessionopen.OpenSession(ctx, open, opts.Instance, workdir)
	if err != nil {
		return err
	}
	defer t.Close()
	if opts.Undo {
		rep, err := review.Undo(ctx, sess)
		if err != nil {
			return err
		}
		fmt.Fprintf(ios.Out, "Restored %d path(s) from the last apply.\n", len(rep.Written))
		printRefused(ios.Out, rep.Refused)
		return nil
	}
	if rep, rolled, err := review.RecoverInterrupted(sess); err != nil {
		return err
	} else if rolled {
		fmt.Fprintln(ios.ErrOut, "An earlier apply was interrupted: what it had written was rolled back.")
		printRefused(ios.ErrOut, rep.Refused)
	}
	cs, err := review.Build(ctx, sess, paths)
	if err != nil {
		return err
	}
	switch {
	case opts.JSON:
		enc := json.NewEncoder(ios.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(changesetJSON(cs))
	case opts.Patch:
		_, err := io.WriteString(ios.Out, review.Patch(cs))
		return err
	}
	if len(cs.Items) == 0 {
		fmt.Fprintln(ios.Out, "Nothing to review: the staged copy matches the host.")
		printIgnored(ios.Out, cs)
		return nil
	}
	decisions, err := decide(opts, cs)
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
		printConflicts(ios.Out, cs)
		return nil
	}
	rep, err := review.Apply(ctx, sess, cs, decisions)
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "Applied: %d path(s) written on the host", len(rep.Written))
	if len(rep.Guest) > 0 {
		fmt.Fprintf(ios.Out, ", %d set in the guest", len(rep.Guest))
	}
	fmt.Fprintf(ios.Out, ". Undo with `limactl mcp review %s --undo`.\n", t.Instance.Name)
	for _, w := range rep.Written {
		fmt.Fprintf(ios.Out, "  wrote   %s\n", termsafe.String(w))
	}
	for _, g := range rep.Guest {
		fmt.Fprintf(ios.Out, "  guest   %s\n", termsafe.String(g))
	}
	printRefused(ios.Out, rep.Refused)
	if opts.Yes {
		printConflicts(ios.Out, cs)
	}
	if len(rep.Refused) > 0 {
		fmt.Fprintf(ios.ErrOut, "%d change(s) could not be applied; they stay pending: run `limactl mcp review %s` again once the reason above is settled.\n", len(rep.Refused), t.Instance.Name)
		return exitcode.With(exitcode.Error, exitcode.ErrSilent)
	}
	return nil
}

// decide gets the decisions for a changeset with items. --yes and --dry-run accept every
// change that is not a conflict; otherwise a person decides on a terminal; without one,
// nothing is applied and the exit code says consent is pending.
func decide(opts *Options, cs *review.Changeset) ([]review.Decision, error) {
	ios := opts.IO
	switch {
	case opts.Yes || opts.DryRun:
		return AcceptNonConflicts(cs), nil
	case ios.IsStdinTTY() && ios.IsStdoutTTY():
		ask := opts.Decide
		if ask == nil {
			ask = func(cs *review.Changeset) ([]review.Decision, error) { return interactive(cs, ios, opts.Accessible) }
		}
		decisions, err := ask(cs)
		if errors.Is(err, ErrAborted) {
			fmt.Fprintln(ios.ErrOut, "Aborted: nothing was applied, host and guest are untouched.")
			return nil, exitcode.With(exitcode.Error, exitcode.ErrSilent)
		}
		return decisions, err
	default:
		printSummary(ios.Out, cs)
		fmt.Fprintln(ios.Out, "\nNo terminal: nothing was applied. Run `limactl mcp review` in a terminal, or pass --yes to apply every change that is not a conflict (--dry-run shows what that would do, --patch prints a diff).")
		return nil, exitcode.With(exitcode.Pending, exitcode.ErrSilent)
	}
}

// AcceptNonConflicts is the policy of --yes: accept every change that is neither a conflict
// nor refused, skip the conflicts (they stay pending), and leave refused changes undecided.
func AcceptNonConflicts(cs *review.Changeset) []review.Decision {
	var ds []review.Decision
	for _, it := range cs.Items {
		switch {
		case it.Refused != "":
		case it.Conflict:
			ds = append(ds, review.Decision{Path: it.Path, Action: review.Skip})
		default:
			ds = append(ds, review.Decision{Path: it.Path, Action: review.Accept})
		}
	}
	return ds
}
