// Package restorecmd is what `limactl mcp restore` does: it puts the guest copy of a staged
// session back to one of its checkpoints. The host is never touched: the pending changes then
// follow what the copy holds.
package restorecmd

import (
	"context"
	"fmt"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Options are the parsed command line of restore and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Checkpoint is the id of the checkpoint to restore.
	Checkpoint string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// DryRun lists what the restore would change, changing nothing.
	DryRun bool
	// Session is --session: the session's name ("" or "default": the unnamed session).
	Session string

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// lockWait bounds the wait for a sync or a review apply of the same session.
const lockWait = time.Minute

// Run restores the guest copy of the working directory's session to a checkpoint.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "restore", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	t, s, err := ref.OpenSession(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	name := t.Instance.Name
	if ref.Inside(s) {
		fmt.Fprintf(ios.ErrOut, "Restoring %s.\n", ref.Which(s))
	}
	// A sync or an apply of the same session would race with the restore: one at a time.
	unlock, err := s.Store().Lock(s.State.ID, lockWait)
	if err != nil {
		return err
	}
	defer unlock()
	if opts.DryRun {
		res, err := s.RestoreCheckpoint(ctx, opts.Checkpoint, true)
		if err != nil {
			return err
		}
		fmt.Fprintf(ios.Out, "Restoring checkpoint %s would change %s in the guest copy:\n", termsafe.String(opts.Checkpoint), words.Count(res.Total, "path"))
		for _, c := range res.Changes {
			fmt.Fprintf(ios.Out, "  %-8s %s\n", c.Kind, termsafe.Path(string(c.Path)))
		}
		if res.Total > len(res.Changes) {
			fmt.Fprintf(ios.Out, "  … and %d more\n", res.Total-len(res.Changes))
		}
		return nil
	}
	// The copy as it is now becomes a checkpoint first, so that the restore can be undone.
	before, err := s.RestoreCheckpointFirst(ctx, opts.Checkpoint)
	if err != nil {
		return fmt.Errorf("checkpointing the guest copy before the restore (nothing was changed): %w", err)
	}
	beforeID := termsafe.String(before.Checkpoint.ID)
	back := fmt.Sprintf("`limactl mcp restore %s %s%s`", name, beforeID, ref.Flag())
	start := time.Now()
	res, err := s.RestoreCheckpoint(ctx, opts.Checkpoint, false)
	e := timeline.Event{Time: start, Kind: timeline.Restore, Checkpoint: opts.Checkpoint, DurationMS: float64(time.Since(start).Microseconds()) / 1000,
		Note: "the copy as it was is checkpoint " + before.Checkpoint.ID}
	if err != nil {
		e.Error = err.Error()
	} else {
		e.Count = res.Total
	}
	timeline.OpenHost(s.Store().SessionDir(s.State.ID), "restore").Record(e)
	if err != nil {
		// The runner checks every content it needs before the first change, so a damaged
		// checkpoint leaves the copy as it was; the checkpoint just taken is that copy either
		// way (whatever stopped the restore), and the store holding it must stay.
		return fmt.Errorf("%w. The guest copy as it was before this restore is checkpoint %s: %s goes back to it if the copy changed", err, beforeID, back)
	}
	fmt.Fprintf(ios.Out, "Restored the guest copy of %s to checkpoint %s: %s changed back. The host was not changed.\n",
		termsafe.String(s.State.Workdir), termsafe.String(opts.Checkpoint), words.Count(res.Total, "path"))
	for _, c := range res.Changes {
		fmt.Fprintf(ios.Out, "  %-8s %s\n", c.Kind, termsafe.Path(string(c.Path)))
	}
	if res.Total > len(res.Changes) {
		fmt.Fprintf(ios.Out, "  … and %d more\n", res.Total-len(res.Changes))
	}
	fmt.Fprintf(ios.Out, "The copy as it was is checkpoint %s: %s goes back to it.\n", beforeID, back)
	return nil
}
