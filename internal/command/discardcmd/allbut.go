package discardcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// runAllBut is `discard --all-but KEEP`: the sessions forked from the same session as KEEP
// (KEEP's siblings, or KEEP's own forks when KEEP is the origin) are discarded; KEEP and the
// origin stay, and so does every session of the directory that is not of that family (another
// agent's session is never discarded on a guess).
func runAllBut(ctx context.Context, opts *Options) error {
	ios := opts.IO
	if opts.Session != "" {
		return errors.New("--all-but NAME and --session NAME cannot be used together: --all-but names the session to keep")
	}
	keepName, err := cmdutil.ParseSessionArg("--all-but", opts.AllBut)
	if err != nil {
		return err
	}
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "discard", Instance: opts.Instance, Workdir: opts.Workdir, Session: keepName, Open: opts.Open})
	if err != nil {
		return err
	}
	t, keep, err := ref.OpenSession(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	workdir := keep.State.Workdir
	origin := keep.State.ID
	if keep.State.Fork != nil {
		origin = keep.State.Fork.ID
	}
	all, err := t.Store.SessionsOf(workdir)
	if err != nil {
		return err
	}
	var doomed []*staging.State
	var kept []string
	for _, st := range all {
		switch {
		case st.ID == keep.State.ID:
		case st.Fork != nil && st.Fork.ID == origin:
			doomed = append(doomed, st)
		default:
			kept = append(kept, staging.SessionLabel(st.Session))
		}
	}
	keepLabel := staging.SessionLabel(keepName)
	if len(doomed) == 0 {
		fmt.Fprintf(ios.Out, "Nothing to discard: session %s of %s has no sibling forks (`limactl mcp status %s` lists the sessions).\n", keepLabel, termsafe.String(workdir), t.Instance.Name)
		return nil
	}
	names := make([]string, len(doomed))
	for i, st := range doomed {
		names[i] = staging.SessionLabel(st.Session)
	}
	list := strings.Join(names, ", ")
	if !opts.Yes && !ios.IsStdinTTY() {
		return exitcode.With(exitcode.Pending, fmt.Errorf("this would discard %s of %s (%s), with every change in them not yet reviewed, and keep %s; pass --yes to confirm without a terminal: `limactl mcp discard %s --all-but %s --yes`",
			words.Count(len(doomed), "session"), termsafe.String(workdir), list, keepLabel, t.Instance.Name, keepLabel))
	}
	// What each holds, said before the question.
	sessions := make([]*staging.Session, len(doomed))
	conns := make([]*guest.Conn, len(doomed))
	lines := make([]string, len(doomed))
	lost := make([]string, len(doomed))
	for i, st := range doomed {
		s, err := t.Session(workdir, st.Session)
		if err != nil {
			return err
		}
		sessions[i] = s
		lines[i] = "  " + names[i]
		// As discard's own: read (and its background ended) as the agent, without its set-up.
		conn, doneReading := t.ReadingConn(ctx, s.State)
		defer doneReading()
		conns[i] = conn
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
			lines[i] += " (its pending changes could not be counted: " + werr.Error() + ")"
		case err != nil:
			lines[i] += " (its pending changes could not be counted: " + termsafe.String(err.Error()) + ")"
		default:
			lines[i] += fmt.Sprintf(": %s that will be lost", words.Count(len(cs.Changes), "pending change"))
			lost[i] = fmt.Sprintf(", with %s", words.Count(len(cs.Changes), "pending change"))
		}
	}
	if !opts.Yes {
		fmt.Fprintf(ios.ErrOut, "Keep session %s and discard %s of %s:\n%s\n", keepLabel, words.Count(len(doomed), "session"), termsafe.String(workdir), strings.Join(lines, "\n"))
		fmt.Fprint(ios.ErrOut, "Discard them? [y/N] ")
		yes, err := confirm(ctx, ios.In)
		if !yes {
			if err != nil {
				fmt.Fprintln(ios.ErrOut)
			}
			fmt.Fprintln(ios.ErrOut, "Nothing discarded.")
			return err
		}
	}
	for i, s := range sessions {
		stopped, err := discardSession(ctx, t, s, conns[i], ios.ErrOut)
		if err != nil {
			return fmt.Errorf("discarding session %s: %w", names[i], err)
		}
		fmt.Fprintf(ios.Out, "Discarded session %s%s%s.\n", names[i], lost[i], stopped)
	}
	msg := "Kept session " + keepLabel
	if len(kept) > 0 {
		msg += "; not discarded: " + strings.Join(kept, ", ") + " (--all-but discards only the sessions forked from the same session)"
	}
	fmt.Fprintln(ios.Out, msg+".")
	return nil
}
