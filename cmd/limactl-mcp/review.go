package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/review/tui"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

type reviewOptions struct {
	session    sessionFlags
	Yes        bool
	DryRun     bool
	Patch      bool
	JSON       bool
	Accessible bool
	Undo       bool
}

func newReviewCmd(ios *iostreams.IOStreams) *cobra.Command {
	opts := &reviewOptions{}
	cmd := &cobra.Command{
		Use:   "review [INSTANCE] [PATH...]",
		Short: "Review the agent's changes and apply what you accept to the host",
		Long: `Review what the agent changed in the staged copy of the working directory, and apply what
you accept to the host: everything, some files, or some hunks of a file. Conflicts (paths the
host changed too) offer keep-host, take-guest or skip.

Every write is atomic and backed up first; "review --undo" restores the last apply. Without a
terminal nothing is written unless --yes is given (which applies every change that is not a
conflict). PATH arguments (after the instance name) limit the review to those paths.`,
		Example: `  limactl mcp review agent                 # the interactive review
  limactl mcp review agent --dry-run       # what --yes would do
  limactl mcp review agent --patch | git apply --check
  limactl mcp review agent src/ --yes      # accept everything under src/
  limactl mcp review agent --undo          # restore what the last apply changed`,
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReview(cmd, ios, opts, args)
		},
	}
	opts.session.register(cmd, false)
	f := cmd.Flags()
	f.BoolVarP(&opts.Yes, "yes", "y", false, "Apply every change that is not a conflict, without asking (conflicts are listed, not applied)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "Show what would be written, and write nothing")
	f.BoolVar(&opts.Patch, "patch", false, "Print the changes as a unified diff that `git apply` accepts, and write nothing")
	f.BoolVar(&opts.JSON, "json", false, "Print the changeset as JSON, and write nothing")
	f.BoolVar(&opts.Accessible, "accessible", false, "Plain prompts for screen readers instead of the full-screen interface")
	f.BoolVar(&opts.Undo, "undo", false, "Restore what the last apply overwrote or deleted")
	return cmd
}

func runReview(cmd *cobra.Command, ios *iostreams.IOStreams, opts *reviewOptions, args []string) error {
	ctx := cmd.Context()
	workdir, err := resolveWorkdir(opts.session.Workdir)
	if err != nil {
		return err
	}
	var paths []string
	if len(args) > 1 {
		for _, p := range args[1:] {
			rel, err := relativeTo(workdir, p)
			if err != nil {
				return err
			}
			paths = append(paths, rel)
		}
	}
	t, sess, err := openSession(ctx, ios, instanceArg(args), workdir)
	if err != nil {
		return err
	}
	defer t.close()
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
	var decisions []review.Decision
	switch {
	case opts.Yes || opts.DryRun:
		decisions = acceptNonConflicts(cs)
	case ios.IsStdinTTY() && ios.IsStdoutTTY():
		decisions, err = tui.Run(cs, ios.In, ios.Out, tui.Options{Accessible: opts.Accessible})
		if errors.Is(err, tui.ErrAborted) {
			fmt.Fprintln(ios.ErrOut, "Aborted: nothing was applied, host and guest are untouched.")
			return &exitCodeError{code: exitError, err: errSilent}
		}
		if err != nil {
			return err
		}
	default:
		printSummary(ios.Out, cs)
		fmt.Fprintln(ios.Out, "\nNo terminal: nothing was applied. Run `limactl mcp review` in a terminal, or pass --yes to apply every change that is not a conflict (--dry-run shows what that would do, --patch prints a diff).")
		return &exitCodeError{code: exitPending, err: errSilent}
	}
	planned, err := review.Plan(cs, decisions)
	if err != nil {
		return err
	}
	if opts.DryRun {
		printSummary(ios.Out, cs)
		fmt.Fprintln(ios.Out, "\nWith --yes, this would:")
		for _, p := range planned {
			fmt.Fprintf(ios.Out, "  %-40s %s\n", review.Sanitize(p.Path), review.Sanitize(p.What))
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
	fmt.Fprintf(ios.Out, ". Undo with `limactl mcp review %s --undo`.\n", t.inst.Name)
	for _, w := range rep.Written {
		fmt.Fprintf(ios.Out, "  wrote   %s\n", review.Sanitize(w))
	}
	for _, g := range rep.Guest {
		fmt.Fprintf(ios.Out, "  guest   %s\n", review.Sanitize(g))
	}
	printRefused(ios.Out, rep.Refused)
	if opts.Yes {
		printConflicts(ios.Out, cs)
	}
	if len(rep.Refused) > 0 {
		fmt.Fprintf(ios.ErrOut, "%d change(s) could not be applied; they stay pending: run `limactl mcp review %s` again once the reason above is settled.\n", len(rep.Refused), t.inst.Name)
		return &exitCodeError{code: exitError, err: errSilent}
	}
	return nil
}

// relativeTo turns a path argument into a path relative to workdir.
func relativeTo(workdir, p string) (string, error) {
	if !filepath.IsAbs(p) {
		wd, err := resolveWorkdir("")
		if err != nil {
			return "", err
		}
		p = filepath.Join(wd, p)
	}
	rel, err := filepath.Rel(workdir, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s is outside the working directory %s", p, workdir)
	}
	return filepath.ToSlash(rel), nil
}

func acceptNonConflicts(cs *review.Changeset) []review.Decision {
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

func kindMark(it *review.Item) string {
	switch {
	case it.Refused != "":
		return "!"
	case it.Conflict:
		return "C"
	case it.Base == nil:
		return "A"
	case it.Guest == nil:
		return "D"
	}
	return "M"
}

func printSummary(w io.Writer, cs *review.Changeset) {
	s := cs.Summary()
	fmt.Fprintf(w, "%d file(s) changed by the agent (+%d −%d lines), %d conflict(s), %d refused:\n", s.Files, s.Added, s.Removed, s.Conflicts, s.Refused)
	for _, it := range cs.Items {
		line := fmt.Sprintf("  %s %s", kindMark(it), it.Display)
		if it.Added+it.Removed > 0 {
			line += fmt.Sprintf("  +%d −%d", it.Added, it.Removed)
		}
		if it.Refused != "" {
			line += "  (refused: " + it.Refused + ")"
		} else if it.Description != "" && it.Description != "modified" {
			line += "  (" + it.Description + ")"
		}
		fmt.Fprintln(w, review.Sanitize(line))
	}
	printIgnored(w, cs)
}

func printIgnored(w io.Writer, cs *review.Changeset) {
	for _, it := range cs.Ignored {
		fmt.Fprintln(w, review.Sanitize(fmt.Sprintf("  ignored %s: %s", it.Display, it.Refused)))
	}
}

func printConflicts(w io.Writer, cs *review.Changeset) {
	for _, it := range cs.Items {
		if it.Conflict && it.Refused == "" {
			fmt.Fprintf(w, "  conflict (not applied): %s — the host changed it too; review it in a terminal to choose\n", review.Sanitize(it.Display))
		}
	}
}

func printRefused(w io.Writer, refused []string) {
	for _, r := range refused {
		fmt.Fprintf(w, "  refused %s\n", review.Sanitize(r))
	}
}

// changesetJSON is the changeset for scripts.
func changesetJSON(cs *review.Changeset) map[string]any {
	type item struct {
		Path        tree.Name `json:"path"`
		Kind        string    `json:"kind"`
		Conflict    bool      `json:"conflict,omitempty"`
		Refused     string    `json:"refused,omitempty"`
		Description string    `json:"description,omitempty"`
		Added       int       `json:"lines_added"`
		Removed     int       `json:"lines_removed"`
		Hunks       int       `json:"hunks"`
	}
	var items, ignored []item
	for _, it := range cs.Items {
		items = append(items, item{Path: tree.Name(it.Path), Kind: string(it.Kind), Conflict: it.Conflict, Refused: it.Refused, Description: it.Description, Added: it.Added, Removed: it.Removed, Hunks: len(it.Hunks)})
	}
	for _, it := range cs.Ignored {
		ignored = append(ignored, item{Path: tree.Name(it.Path), Kind: string(it.Kind), Refused: it.Refused})
	}
	return map[string]any{"workdir": cs.Workdir, "summary": cs.Summary(), "items": items, "ignored": ignored}
}
