package logcmd

import (
	"context"
	"slices"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// DefaultSettle is how long --follow holds an event after reading it, so that the events
// written a little later but begun earlier (a network event serve copies from the guest's
// record some 300 ms to a few seconds after the command that made it) are printed in the
// order they began, as `log` prints them. Output lags by this much, and no more.
const DefaultSettle = 2 * time.Second

// settler holds the events --follow reads for its window and gives them back in the order
// they began.
type settler struct {
	window time.Duration
	held   []heldEvent // in the order read
	// last is the start of the latest event printed: one that began before it is late.
	last time.Time
}

type heldEvent struct {
	e    timeline.Event
	read time.Time
}

// followed is an event to print, late when it began before an event already printed.
type followed struct {
	e    timeline.Event
	late bool
}

// add holds e, read at now.
func (s *settler) add(e *timeline.Event, now time.Time) {
	s.held = append(s.held, heldEvent{e: *e, read: now})
}

// due takes the events to print at now, in the order they began (events of one time in the
// order read): those held for the window (every one when all), and with them every held
// event that began before one of those, which would otherwise be printed late.
func (s *settler) due(now time.Time, all bool) []followed {
	var upTo time.Time // the latest start among the events whose window is over
	ready := false
	for _, h := range s.held {
		if all || !now.Before(h.read.Add(s.window)) {
			if !ready || h.e.Time.After(upTo) {
				upTo = h.e.Time
			}
			ready = true
		}
	}
	if !ready {
		return nil
	}
	var out []followed
	kept := s.held[:0]
	for _, h := range s.held {
		if h.e.Time.After(upTo) {
			kept = append(kept, h)
			continue
		}
		out = append(out, followed{e: h.e})
	}
	s.held = kept
	slices.SortStableFunc(out, func(a, b followed) int { return a.e.Time.Compare(b.e.Time) })
	for i := range out {
		if out[i].e.Time.Before(s.last) {
			out[i].late = true
		} else {
			s.last = out[i].e.Time
		}
	}
	return out
}

// follow prints the events appended to the timeline in dir after tl was read, held for the
// settle window and in the order they began (settler), until ctx ends; what is held then is
// printed at once. last is the start of the latest event printed before.
func follow(ctx context.Context, opts *Options, tl *timeline.Timeline, dir string, p *printer, last time.Time) error {
	s := &settler{window: opts.Settle, last: last}
	if s.window <= 0 {
		s.window = DefaultSettle
	}
	ticks := opts.Ticks
	if ticks == nil {
		poll := opts.Poll
		if poll <= 0 {
			poll = 500 * time.Millisecond
		}
		t := time.NewTicker(poll)
		defer t.Stop()
		ticks = t.C
	}
	show := func(events []followed) {
		for i := range events {
			if opts.JSON {
				_ = p.json(&events[i].e) // its t says where it belongs
			} else {
				p.followedLine(&events[i])
			}
		}
	}
	f := tl.Follower(dir)
	for {
		var at time.Time
		select {
		case <-ctx.Done():
			show(s.due(time.Time{}, true)) // interrupted: what was read is not lost
			return nil
		case at = <-ticks:
		}
		err := f.Read(func(e *timeline.Event) { s.add(e, at) })
		show(s.due(at, err != nil))
		if err != nil {
			return err
		}
	}
}

// lateMark begins the line of an event --follow prints after one that began later.
const lateMark = "(late) "

// followedLine prints an event --follow read: a late one marked as such.
func (p *printer) followedLine(f *followed) {
	if f.late {
		p.markedLine(&f.e, lateMark)
		return
	}
	p.line(&f.e)
}
