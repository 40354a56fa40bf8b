// Package synccmd is what `limactl mcp sync` does: it brings host edits made since staging
// into the guest copy, keeping the agent's work.
package synccmd

import (
	"context"
	"fmt"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Options are the parsed command line of sync and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Session is --session: the session's name ("" or "default": the unnamed session).
	Session string

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

const nothingToCopy = "Nothing to copy: the host has no edit since the copy was staged (or last synced) that the guest copy lacks."

// hostUnchanged says whether the session ref names is stored and its host side has no edit
// since its baseline (staging.Store.HostUnchanged), with the session named when it is that of
// a staged project holding the working directory (as the whole way names it).
func hostUnchanged(ctx context.Context, ref *cmdutil.Ref) (bool, string) {
	t, workdir, st, err := ref.OpenState(ctx)
	if err != nil {
		return false, ""
	}
	defer t.Close()
	if st == nil {
		return false, ""
	}
	start := time.Now()
	if nothing, err := t.Store.HostUnchanged(ctx, st.ID); err != nil || !nothing {
		return false, ""
	}
	timeline.OpenHost(t.Store.SessionDir(st.ID), "sync").Record(timeline.Event{Time: start, Kind: timeline.Sync, DurationMS: float64(time.Since(start).Microseconds()) / 1000})
	if workdir != ref.Workdir {
		return true, ref.Which(staging.Attach(nil, t.Store, st, nil))
	}
	return true, ""
}

// Run syncs the session of the working directory.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "sync", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	// No host edit since the baseline: nothing to copy, said without reaching the guest (a
	// connection, and under a network policy the agent's set-up: seconds). Anything else,
	// a failure included, goes the whole way, which says what is wrong.
	if nothing, which := hostUnchanged(ctx, ref); nothing {
		if which != "" {
			fmt.Fprintf(ios.ErrOut, "Syncing %s.\n", which)
		}
		fmt.Fprintln(ios.Out, nothingToCopy)
		return nil
	}
	// On a terminal, a wait of seconds (connecting, comparing the trees) shows progress.
	if ios.IsStdoutTTY() {
		fmt.Fprintf(ios.ErrOut, "Connecting to %s… comparing %s with its staged copy…\n", termsafe.String(opts.Instance), termsafe.String(ref.Workdir))
	}
	t, s, err := ref.OpenSession(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	if ref.Inside(s) {
		fmt.Fprintf(ios.ErrOut, "Syncing %s.\n", ref.Which(s))
	}
	start := time.Now()
	rep, err := s.Sync(ctx)
	e := timeline.Event{Time: start, Kind: timeline.Sync, DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		e.Error = err.Error()
	} else {
		for _, n := range append(append([]tree.Name{}, rep.Pushed...), rep.Removed...) {
			e.Paths = append(e.Paths, string(n))
		}
		e.Count, e.Checkpoint = len(e.Paths), rep.Checkpoint
	}
	timeline.OpenHost(s.Store().SessionDir(s.State.ID), "sync").Record(e)
	if err != nil {
		return err
	}
	if len(rep.Pushed)+len(rep.Removed)+len(rep.Conflicts) == 0 {
		fmt.Fprintln(ios.Out, nothingToCopy)
	} else {
		fmt.Fprintf(ios.Out, "Copied %s into the guest and removed %s the host deleted.\n", words.Count(len(rep.Pushed), "host change"), words.Count(len(rep.Removed), "path"))
	}
	if rep.Checkpoint != "" {
		fmt.Fprintf(ios.ErrOut, "The guest copy was checkpointed first: `limactl mcp restore %s %s%s` puts it back as it was.\n", opts.Instance, rep.Checkpoint, ref.Flag())
	}
	if rep.CheckpointError != "" {
		fmt.Fprintf(ios.ErrOut, "warning: no checkpoint of the guest copy was taken before the sync: %s\n", termsafe.String(rep.CheckpointError))
	}
	for _, p := range rep.Conflicts {
		fmt.Fprintf(ios.Out, "conflict: %s changed on both sides; the guest's version is kept (see `limactl mcp review %s%s`)\n", termsafe.Path(string(p)), t.Instance.Name, ref.Flag())
	}
	return nil
}
