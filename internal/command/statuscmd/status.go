// Package statuscmd is what `limactl mcp status` does: it lists the staged sessions of an
// instance and their pending changes.
package statuscmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/portscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/preview"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Options are the parsed command line of status and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	JSON     bool
	// Session is --session: show only the sessions of this name ("": every session;
	// "default": the unnamed ones).
	Session string

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// Run shows the status.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	phases := cmdutil.NewPhases(ios.ErrOut, "status")
	ref, err := cmdutil.ResolveInstance(cmdutil.Selector{IO: ios, Verb: "status", Instance: opts.Instance, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	only := ref.Session
	// On a terminal, a wait of seconds (connecting, scanning each staged copy) shows progress.
	if ios.IsStdoutTTY() && !opts.JSON {
		fmt.Fprintf(ios.ErrOut, "Connecting to %s… reading its staged sessions…\n", termsafe.String(opts.Instance))
	}
	t, err := ref.OpenInstance(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	phases.Done("opened the instance")
	var keep func(*staging.State) bool // --session: only its sessions are read from the guest
	if opts.Session != "" {
		keep = func(st *staging.State) bool { return st.Session == only }
	}
	sts, err := staging.Statuses(ctx, t.Conn, t.ReadingConnFor, t.Store, t.ConnErr, keep)
	if err != nil {
		return err
	}
	phases.Done(fmt.Sprintf("read %d sessions", len(sts)))
	for _, s := range sts {
		phases.Note("%s [%s]: %s", s.Workdir, staging.SessionLabel(s.Session), s.Took.Round(time.Millisecond))
	}
	tls := timelineCounts(t.Store, sts)
	uses := func(s staging.SessionStatus) (secretsUsed, requests []string) {
		return secrets.Summaries(t.Store.SessionDir(staging.SessionIDOf(s.Workdir, s.Session)))
	}
	if opts.JSON {
		enc := json.NewEncoder(ios.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(toJSON(t.Instance.Name, sts, tls, uses))
	}
	if opts.Session != "" && len(sts) == 0 {
		fmt.Fprintf(ios.Out, "No session called %q in instance %q. An agent running `limactl mcp serve%s %s` in a project directory creates one; `limactl mcp status %s` lists every session.\n",
			staging.SessionLabel(only), t.Instance.Name, staging.SessionFlag(only), t.Instance.Name, t.Instance.Name)
		return nil
	}
	recs, _ := portscmd.Records(t.Store) // the previews: the host's own record (best effort)
	printStatus(ios.Out, t.Instance.Name, sts, tls, recs, uses)
	return nil
}

// usesOf is what a session's log of uses says (secrets.Summaries):
// the secrets its requests carried, and the HTTPS requests the network rules ruled on.
type usesOf func(staging.SessionStatus) (secretsUsed, requests []string)

func printStatus(w io.Writer, inst string, sts []staging.SessionStatus, tls []*timeline.Counts, recs []preview.Record, secretsUses usesOf) {
	if len(sts) == 0 {
		fmt.Fprintf(w, "No staged sessions in instance %q. An agent running `limactl mcp serve %s` in a project directory creates one.\n", inst, inst)
		return
	}
	// Each session's timeline totals, found again after grouping reorders the sessions.
	counts := map[string]*timeline.Counts{}
	for i, s := range sts {
		if i < len(tls) {
			counts[s.Workdir+"\x00"+s.Session] = tls[i]
		}
	}
	sts, forks := grouped(sts)
	for i, s := range sts {
		switch {
		case s.Fork != nil:
			// Listed right after the session it was forked from (grouped).
			fmt.Fprintf(w, "%s  [session %s, a fork of %s]\n", s.Workdir, s.Session, staging.SessionLabel(s.Fork.Session))
		case s.Session != "":
			fmt.Fprintf(w, "%s  [session %s]\n", s.Workdir, s.Session)
		default:
			fmt.Fprintf(w, "%s\n", s.Workdir)
		}
		if forks[i] != "" {
			fmt.Fprintf(w, "  forked from: %s\n", termsafe.String(forks[i]))
		}
		if s.GuestPath != s.Workdir {
			fmt.Fprintf(w, "  guest path: %s\n", s.GuestPath)
		}
		fmt.Fprintf(w, "  staged:     %s (%s), %s, %.1f MB\n", s.StagedAt.Local().Format("2006-01-02 15:04"),
			words.Ago(time.Since(s.StagedAt)), words.Count(s.Files, "file"), float64(s.Bytes)/1e6)
		switch {
		case s.Error != "":
			fmt.Fprintf(w, "  pending:    unknown (%s)\n", termsafe.String(s.Error)) // may quote the guest
		case s.PendingTotal == 0:
			// What the agent changed is all status reads: the host's edits are not walked here.
			fmt.Fprintf(w, "  pending:    nothing (the agent changed nothing; host edits are not counted)\n")
		default:
			var parts []string
			for k, n := range s.Pending {
				parts = append(parts, fmt.Sprintf("%d %s", n, k))
			}
			sort.Strings(parts)
			fmt.Fprintf(w, "  pending:    %s: %s — run `limactl mcp review %s%s` in %s\n", words.Count(s.PendingTotal, "change"), strings.Join(parts, ", "), inst, staging.SessionFlag(s.Session), s.Workdir)
		}
		if s.Network != nil && s.Network.Policy != staging.OpenNetwork {
			fmt.Fprintf(w, "  network:    %s\n", termsafe.String(strings.TrimPrefix(s.Network.Line(), "network policy ")))
		}
		if c := counts[s.Workdir+"\x00"+s.Session]; c != nil {
			fmt.Fprintf(w, "  timeline:   %s\n", timelineLine(c, inst, s))
		}
		if secretsUses != nil {
			used, requests := secretsUses(s)
			for _, line := range used {
				fmt.Fprintf(w, "  secrets:    %s\n", termsafe.String(line))
			}
			for _, line := range requests {
				fmt.Fprintf(w, "  requests:   %s\n", termsafe.String(line))
			}
		}
		printPorts(w, s, recs)
		printCheckpoints(w, inst, s)
	}
}

// printPorts lists the session's previews: the ports its background processes listen on,
// with the host URLs its MCP server forwards them to (limactl mcp ports).
func printPorts(w io.Writer, s staging.SessionStatus, recs []preview.Record) {
	for _, r := range recs {
		if r.Workdir != s.Workdir || r.Session != s.Session {
			continue
		}
		for _, p := range r.Ports {
			fmt.Fprintf(w, "  port:       %s\n", portscmd.Line(p, r.Shell))
		}
	}
}

// printCheckpoints lists a session's checkpoints, newest last, with the command that restores one.
func printCheckpoints(w io.Writer, inst string, s staging.SessionStatus) {
	switch {
	case s.CheckpointsError != "":
		fmt.Fprintf(w, "  checkpoints: unknown (%s)\n", termsafe.String(s.CheckpointsError))
		return
	case len(s.Checkpoints) == 0:
		return
	}
	fmt.Fprintf(w, "  checkpoints: %s, %.1f MB in the guest — `limactl mcp restore %s ID` in %s\n", words.Count(len(s.Checkpoints), "checkpoint"), float64(s.CheckpointBytes)/1e6, inst, s.Workdir)
	for _, c := range s.Checkpoints {
		label := c.Label
		if c.Auto {
			label += " (automatic)"
		}
		fmt.Fprintf(w, "    %-5s %s  %s, %.1f MB  %s\n", c.ID, time.UnixMilli(c.TimeMillis).Local().Format("2006-01-02 15:04:05"), words.Count(c.Files, "file"), float64(c.Bytes)/1e6, termsafe.String(label))
	}
}
