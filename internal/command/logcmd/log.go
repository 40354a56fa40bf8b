// Package logcmd is what `limactl mcp log` does: it prints a staged session's timeline
// (internal/timeline), readable, as JSON lines, or its shell commands as a script.
package logcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Options are the parsed command line of log and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Session is --session ("" or "default": the unnamed session).
	Session  string
	Follow   bool
	Since    string
	JSON     bool
	Commands bool

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
	// Now is the clock of --since (10m, HH:MM); default time.Now.
	Now func() time.Time
	// Poll is how often --follow looks (default 500 ms).
	Poll time.Duration
	// Ticks, when set, are when --follow looks instead of every Poll, each value the time of
	// its look (a test's clock).
	Ticks <-chan time.Time
	// Settle is how long --follow holds an event it read (default DefaultSettle).
	Settle time.Duration
}

// Validate checks the flags that exclude each other, before anything is opened.
func (o *Options) Validate() error {
	switch {
	case o.Commands && o.JSON:
		return errors.New("--commands and --json cannot be used together: --commands prints a script, --json the events")
	case o.Commands && o.Follow:
		return errors.New("--commands and --follow cannot be used together: the script is printed once")
	}
	return nil
}

// Run prints the timeline.
func Run(ctx context.Context, opts *Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	ios := opts.IO
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	// A --since that is a time is checked before anything is opened.
	since, sinceTime, err := parseSince(opts.Since, now())
	if err != nil {
		return err
	}
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "log", Instance: opts.Instance, Workdir: opts.Workdir, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	t, sess, err := ref.OpenSession(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	dir := sess.Store().SessionDir(sess.State.ID)
	tl, err := timeline.Read(dir)
	if err != nil {
		return err
	}
	// In order of when each event began: a call is written when it returns, and the network
	// events when serve reads the guest's record after the command that made them.
	events := timeline.ByTime(tl.Events)
	if opts.Since != "" {
		if !sinceTime {
			at, ok := checkpointTime(events, since.checkpoint)
			if !ok {
				return fmt.Errorf("--since %s: not a time (RFC 3339, HH:MM[:SS], or a duration ago like 10m) nor a checkpoint this session's timeline records (`limactl mcp status %s` lists the checkpoints)", opts.Since, t.Instance.Name+ref.Flag())
			}
			since.t = at
		}
		events = after(events, since.t)
	}
	p := &printer{w: ios.Out, workdir: sess.State.Workdir}
	switch {
	case opts.Commands:
		return p.script(events, sess.State, ref.Flag(), t.Instance.Name)
	case opts.JSON:
		for i := range events {
			if err := p.json(&events[i]); err != nil {
				return err
			}
		}
	default:
		if len(events) == 0 && !opts.Follow {
			what := "no events recorded yet"
			if opts.Since != "" && len(tl.Events) > 0 {
				what = "no events since " + opts.Since
			}
			fmt.Fprintf(ios.Out, "The timeline of %s has %s.\n", termsafe.String(sessionopen.Which(sess, ref.Workdir)), what)
			return nil
		}
		for i := range events {
			p.line(&events[i])
		}
		if !opts.Follow {
			fmt.Fprintln(ios.Out, Summary(tl))
		}
	}
	if !opts.Follow {
		return nil
	}
	var last time.Time
	if len(events) > 0 {
		last = events[len(events)-1].Time
	}
	return follow(ctx, opts, tl, dir, p, last)
}

// Summary says a timeline's totals in one line: "41 events: 30 calls (12 commands), 3
// failed; 2 min 5 s in calls".
func Summary(tl *timeline.Timeline) string {
	c := tl.Counts
	s := fmt.Sprintf("%s: %s (%s), %s failed; %s in calls and commands",
		words.Count(c.Events, "event"), words.Count(c.Calls, "tool call"), words.Count(c.Commands, "shell command"), strconv.Itoa(c.Failures), timeline.Duration(c.BusyMS))
	if c.NetAllowed > 0 || c.NetBlocked > 0 {
		s += fmt.Sprintf("; network: %s allowed, %s blocked", words.Count(c.NetAllowed, "attempt"), words.Count(c.NetBlocked, "attempt"))
	}
	if tl.Dropped.Events > 0 {
		s += fmt.Sprintf(" (the oldest %d events were rotated out: counted, not shown)", tl.Dropped.Events)
	}
	if tl.Bad > 0 {
		s += fmt.Sprintf("; %s could not be read", words.Count(tl.Bad, "line"))
	}
	return s + "."
}

type sinceArg struct {
	t          time.Time
	checkpoint string
}

// parseSince reads --since: a time (RFC 3339, HH:MM[:SS] today, a duration ago) or else a
// checkpoint id (said by isTime false).
func parseSince(s string, now time.Time) (sinceArg, bool, error) {
	if s == "" {
		return sinceArg{}, true, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return sinceArg{t: t}, true, nil
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if c, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			y, m, d := now.Date()
			return sinceArg{t: time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), 0, now.Location())}, true, nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return sinceArg{}, false, fmt.Errorf("--since %s: a duration ago is positive (10m, 2h)", s)
		}
		return sinceArg{t: now.Add(-d)}, true, nil
	}
	if _, err := strconv.Atoi(s); err == nil || strings.HasPrefix(s, "auto") {
		return sinceArg{checkpoint: s}, false, nil
	}
	return sinceArg{}, false, fmt.Errorf("--since %s: not a time (RFC 3339 like 2026-01-02T15:04:05Z, HH:MM[:SS] today, or a duration ago like 10m) nor a checkpoint id (a number)", s)
}

// checkpointTime is when checkpoint id was taken, by the latest event that took it.
func checkpointTime(events []timeline.Event, id string) (time.Time, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		e := &events[i]
		taken := (e.Kind == timeline.Call && e.Tool == "checkpoint") || e.Kind == timeline.Checkpoint
		if taken && e.Checkpoint == id && e.Error == "" {
			return e.End(), true
		}
	}
	return time.Time{}, false
}

// after keeps the events that began at or after t, or were still running then.
func after(events []timeline.Event, t time.Time) []timeline.Event {
	var out []timeline.Event
	for _, e := range events {
		if !e.End().Before(t) {
			out = append(out, e)
		}
	}
	return out
}

type printer struct {
	w       io.Writer
	workdir string
	day     string // the date of the last line printed
}

func (p *printer) json(e *timeline.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(p.w, "%s\n", data)
	return err
}

// line prints e as one line (after a date line when the date changes). Everything the
// guest or the agent wrote is escaped (termsafe).
func (p *printer) line(e *timeline.Event) { p.markedLine(e, "") }

// markedLine is line with mark before the event's words.
func (p *printer) markedLine(e *timeline.Event, mark string) {
	local := e.Time.Local()
	if day := local.Format("2006-01-02"); day != p.day {
		fmt.Fprintf(p.w, "— %s —\n", day)
		p.day = day
	}
	fmt.Fprintf(p.w, "%s  %-7s %s%s\n", local.Format("15:04:05.000"), e.Source, mark, termsafe.String(Describe(e)))
}

// Describe says an event in words, without its time (timeline.Describe).
func Describe(e *timeline.Event) string { return timeline.Describe(e) }

// oneLine is s on one line, cut after n bytes (timeline.OneLine).
func oneLine(s string, n int) string { return timeline.OneLine(s, n) }

// script prints the shell commands of events as a script for a person to read: each with a
// comment saying when, where, how it ended. Nothing in it is ever run by us; the first lines
// say so, and it exits before its first command.
func (p *printer) script(events []timeline.Event, st *staging.State, flag, inst string) error {
	w := p.w
	fmt.Fprintf(w, "#!/bin/sh\n")
	fmt.Fprintf(w, "# The shell commands the agent (and `limactl mcp shell`) ran in the staged copy of\n# %s%s, in order, as recorded (limactl mcp log %s%s --commands).\n", termsafe.String(st.Workdir), sessionNote(st.Session), inst, flag)
	fmt.Fprintf(w, "# For reading: this script was never run by limactl-mcp, and it stops here if run.\n# Text the agent wrote is shown with control characters escaped; secrets known to the\n# recorder are [redacted].\nexit 1\n")
	n := 0
	for i := range events {
		e := &events[i]
		if !e.IsCommand() || e.Command == "" {
			continue
		}
		n++
		var what []string
		if e.Kind == timeline.Command {
			what = append(what, "shell")
		}
		if e.Background != 0 {
			what = append(what, fmt.Sprintf("background %d", e.Background))
		}
		if e.Exit != nil {
			what = append(what, fmt.Sprintf("exit %d", *e.Exit))
		}
		if e.Signal != "" {
			what = append(what, "signal "+e.Signal)
		}
		if e.Error != "" {
			what = append(what, "error: "+oneLine(e.Error, 120))
		}
		if e.DurationMS > 0 && e.Background == 0 {
			what = append(what, timeline.Duration(e.DurationMS))
		}
		fmt.Fprintf(w, "\n# %s %s\n", e.Time.Local().Format("2006-01-02 15:04:05"), termsafe.String(strings.Join(what, ", ")))
		cmd := e.Command
		if e.Dir != "" {
			cmd = "cd " + shellquote.Quote(e.Dir) + " && " + cmd
		}
		if e.Background != 0 {
			cmd += " &"
		}
		fmt.Fprintln(w, termsafe.Lines(cmd, ""))
	}
	if n == 0 {
		fmt.Fprintln(w, "\n# (no shell commands recorded)")
	}
	return nil
}

func sessionNote(s string) string {
	if s == "" {
		return ""
	}
	return " (session " + s + ")"
}
