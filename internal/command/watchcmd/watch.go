// Package watchcmd is `limactl mcp watch INSTANCE`: the destinations the agent of a session
// under a network policy was refused, live, newest first, each a key away from being allowed
// for the session (networkcmd.Change, the change `network allow` makes), allowed and saved
// as the project's policy, or dismissed; `--json` streams them for scripts.
package watchcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/networkcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netwatch"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// Options are what `watch` depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	Workdir  string
	Session  string
	// JSON streams one object per new or changed blocked destination per line.
	JSON bool
	// Interval is how often the record is read (default and bounds: DefaultInterval,
	// minInterval, maxInterval).
	Interval time.Duration

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
	// ReadRecord reads `net report`'s answer for the agent user (nil: networkcmd.ReadRecord,
	// root's runner through the instance's connection); the answer is checked as guest output.
	ReadRecord networkcmd.RecordReader
	// Decide hands the person's decision on a held connection to the guest (nil:
	// networkcmd.DecideHeld, root's runner through the instance's connection).
	Decide networkcmd.HeldDecider
}

const (
	// DefaultInterval is how often watch reads the record.
	DefaultInterval = netwatch.DefaultInterval
	minInterval     = 50 * time.Millisecond
	maxInterval     = time.Minute
)

// Destination is one host and port the agent was refused (netwatch's).
type Destination = netwatch.Destination

// watcher is one watch of one session.
type watcher struct {
	opts *Options
	nw   *netwatch.Watch
}

// Run watches the session's blocked attempts until the person quits (or, with --json, until
// interrupted).
func Run(ctx context.Context, opts *Options) error {
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Interval < minInterval || opts.Interval > maxInterval {
		return fmt.Errorf("watch: the interval %v is not between %v and %v", opts.Interval, minInterval, maxInterval)
	}
	if !opts.JSON && !(opts.IO.IsStdinTTY() && opts.IO.IsStdoutTTY()) {
		return errors.New("watch needs a terminal to ask on; for a script, stream the blocked attempts with --json")
	}
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: opts.IO, Verb: "watch", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	t, workdir, st, err := ref.OpenState(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	if st == nil {
		_, err := t.Session(workdir, ref.Session) // says there is none, and which there are
		if err == nil {
			err = errors.New("no staged session")
		}
		return err
	}
	if staging.NetworkOf(st) == staging.OpenNetwork {
		return fmt.Errorf("the session's network policy is open: nothing is blocked, so there is nothing to watch. Put the agent under a policy by restarting its server with one: limactl mcp serve --network=none%s (or --network=allow:@go,example.com; limactl mcp configure --network=... for the agent's configuration); then blocked attempts show here", ref.Flag())
	}
	w := &watcher{opts: opts, nw: netwatch.New(networkcmd.WatchSource(t, st, ref.Flag(), opts.ReadRecord, opts.Decide, opts.Interval))}
	defer w.nw.End(ctx)
	if opts.JSON {
		return w.stream(ctx)
	}
	return w.tui(ctx)
}

// stream prints every new or changed destination as a JSON line until ctx ends (a held
// connection once, when first read: "held": true, its id and seconds_left). A read that
// fails is said on stderr (once until the reads work again) and retried; the first one
// failing ends the watch with its error.
func (w *watcher) stream(ctx context.Context) error {
	enc := json.NewEncoder(w.opts.IO.Out)
	failing := ""
	first := true
	tick := time.NewTicker(w.opts.Interval)
	defer tick.Stop()
	for {
		changed, err := w.nw.Read(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && first:
			return fmt.Errorf("reading the agent's network record: %w", err)
		case err != nil:
			if msg := err.Error(); msg != failing {
				fmt.Fprintf(w.opts.IO.ErrOut, "watch: reading the agent's network record: %s (trying again)\n", termsafe.String(msg))
				failing = msg
			}
		default:
			failing = ""
			for _, d := range changed {
				if err := enc.Encode(d); err != nil {
					return err
				}
			}
		}
		first = false
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
