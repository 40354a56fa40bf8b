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
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/networkcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
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
	// ReadRecord reads `net report`'s answer for the agent user (default: the instance's
	// connection, NetRecord, which asks root's runner); the answer is checked as guest output.
	ReadRecord func(ctx context.Context, t *sessionopen.Target, user string) ([]byte, error)
}

const (
	// DefaultInterval is how often watch reads the record.
	DefaultInterval = time.Second
	minInterval     = 50 * time.Millisecond
	maxInterval     = time.Minute
	// readTimeout bounds one read of the record.
	readTimeout = 30 * time.Second
)

// readRecord is the default Options.ReadRecord.
func readRecord(ctx context.Context, t *sessionopen.Target, user string) ([]byte, error) {
	if t.Conn == nil {
		return nil, fmt.Errorf("instance %s is not running (%v): the agent makes no connection to watch", t.Instance.Name, t.ConnErr)
	}
	return t.Conn.NetRecord(ctx, user, netpolicy.MaxReportEntries)
}

// watcher is one watch of one session.
type watcher struct {
	opts      *Options
	t         *sessionopen.Target
	st        *staging.State
	flagsHint string

	mu sync.Mutex // b: the reads and the decisions run in goroutines of their own
	b  *blocked
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
	if opts.ReadRecord == nil {
		opts.ReadRecord = readRecord
	}
	if !opts.JSON && !(opts.IO.IsStdinTTY() && opts.IO.IsStdoutTTY()) {
		return errors.New("watch needs a terminal to ask on; for a script, stream the blocked attempts with --json")
	}
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: opts.IO, Verb: "watch", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	t, err := ref.OpenInstance(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	workdir, err := t.Find("watch", ref.Workdir, ref.Session)
	if err != nil {
		return err
	}
	st, err := t.Lookup(workdir, ref.Session)
	if err != nil {
		return err
	}
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
	w := &watcher{opts: opts, t: t, st: st, flagsHint: ref.Flag(), b: newBlocked()}
	if opts.JSON {
		return w.stream(ctx)
	}
	return w.tui(ctx)
}

// read reads the record once (bounded) and counts what is new: the destinations it changed.
func (w *watcher) read(ctx context.Context) ([]Destination, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	user := staging.AgentUser(w.st.ID)
	data, err := w.opts.ReadRecord(ctx, w.t, user)
	if err != nil {
		return nil, err
	}
	rec, err := netpolicy.ParseRecord(data, user)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.add(rec.Entries), nil
}

// stream prints every new or changed destination as a JSON line until ctx ends. A read that
// fails is said on stderr (once until the reads work again) and retried; the first one
// failing ends the watch with its error.
func (w *watcher) stream(ctx context.Context) error {
	enc := json.NewEncoder(w.opts.IO.Out)
	failing := ""
	first := true
	tick := time.NewTicker(w.opts.Interval)
	defer tick.Stop()
	for {
		changed, err := w.read(ctx)
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

// list is the destinations to decide on, newest first.
func (w *watcher) list() []Destination {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.list()
}

// deny hides d from the list for the rest of the watch: it is refused already.
func (w *watcher) deny(d Destination) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.denied[d.Entry()] = true
}

// allow applies the person's decision on d: allow for the session (save: and keep it as the
// project's policy), the change `network INSTANCE allow` makes; it returns what to say.
func (w *watcher) allow(ctx context.Context, d Destination, save bool) (string, error) {
	prev, policy, applied, err := networkcmd.Change(ctx, w.t, w.st, "allow", []string{d.Entry()}, save, w.flagsHint)
	if err != nil {
		return "", fmt.Errorf("allow %s: %w", termsafe.String(d.Entry()), err)
	}
	w.mu.Lock()
	w.b.allowed[d.Entry()] = true
	w.mu.Unlock()
	msg := fmt.Sprintf("allowed %s: policy %s (was %s)", termsafe.String(d.Entry()), policy, prev)
	if applied {
		msg += ", in force now"
	} else {
		msg += ", recorded: put in place when the session next connects"
	}
	if save {
		msg += "; saved as the project's policy"
	}
	return msg, nil
}
