package netwatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// Source is what a watch needs of a session, given by its caller (the watch command, the
// review command for its TUI), so that this package holds no connection.
type Source struct {
	// Read reads the agent's network record once (bounded by ctx), checked as guest output.
	Read func(ctx context.Context) (*netpolicy.Record, error)
	// Allow allows the destination for the session (save: and as the project's policy), the
	// change `network INSTANCE allow` makes; it returns what to say.
	Allow func(ctx context.Context, entry string, save bool) (string, error)
	// Decide hands the person's decision (netpolicy.DecisionOnce, DecisionDeny) on a held
	// connection (its id, the record's) to the guest (nil: no decision on held connections).
	Decide func(ctx context.Context, id, decision string) error
	// Requests reads the requests the session's relay on the host refused under the network
	// rules, oldest first (nil: none are watched). Their method and path are the agent's: a
	// rule is made of one only when it names exactly that request (Watch.Allow).
	Requests func() ([]Request, error)
	// HeldRequests reads the requests the session's relay holds now, oldest first (Request.ID
	// and Deadline set), and says that a person watches: the relay holds a request its rules
	// refuse only while a watch reads (nil: none are held).
	HeldRequests func() ([]Request, error)
	// DecideRequest hands the person's decision (netpolicy.DecisionOnce, DecisionDeny) on a
	// request the relay holds (its id) to the relay.
	DecideRequest func(id, decision string) error
	// Policy is the session's policy as recorded now.
	Policy func() string
	// End says that the watch has stopped (nil: nothing to say), bounded by itself.
	End func(ctx context.Context)
	// Title names what is watched (shown through termsafe).
	Title string
	// Interval is how often the screen reads the record.
	Interval time.Duration
}

const (
	// ReadTimeout bounds one read of the record.
	ReadTimeout = 30 * time.Second
	// DefaultInterval is how often a watch reads the record.
	DefaultInterval = time.Second
)

// Request is a request the session's relay refused under the network rules.
type Request struct {
	Time         time.Time
	Host         string
	Port         int
	Method, Path string
	Reason       string
	// Command is the command behind the request's connection, as the guest's proxy found it
	// ("": none): the agent's text.
	Command string
	// ID and Deadline are those of a request the relay holds (Source.HeldRequests).
	ID       string
	Deadline time.Time
}

// Watch is one watch of one session: its counted destinations and the person's decisions.
// The reads and the decisions may run in goroutines of their own.
type Watch struct {
	src Source
	mu  sync.Mutex
	b   *blocked
	// reqs are the requests the relay refused (Source.Requests), counted apart: another source.
	reqs *blocked
	// held are the connections the last read found held, read at readAt; seenHeld the ids
	// read so far, decided the ids the person decided on (hidden until the guest drops them).
	held              []netpolicy.HeldConn
	readAt            time.Time
	seenHeld, decided map[string]bool
	// heldReqs are the requests the relay held at the last read (their ids are the relay's,
	// never a guest's: the two are kept apart by Via).
	heldReqs []Request
}

// New starts a watch of src with nothing counted yet.
func New(src Source) *Watch {
	return &Watch{src: src, b: newBlocked(), reqs: newBlocked(), seenHeld: map[string]bool{}, decided: map[string]bool{}}
}

// Read reads the record once (bounded by ReadTimeout) and counts what is new: the
// destinations it changed, newest first.
func (w *Watch) Read(ctx context.Context) ([]Destination, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	rec, err := w.src.Read(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var heldReqs []Request
	var heldErr error
	if w.src.HeldRequests != nil {
		heldReqs, heldErr = w.src.HeldRequests()
	}
	w.held, w.heldReqs, w.readAt = rec.Held, heldReqs, time.Now()
	ids := map[string]bool{}
	for _, h := range rec.Held {
		ids[heldKey(netpolicy.ViaProxy, h.ID)] = true
	}
	for _, r := range heldReqs {
		ids[heldKey(ViaRelay, r.ID)] = true
	}
	var changed []Destination
	for _, d := range w.heldList() {
		if !w.seenHeld[heldKey(d.Via, d.ID)] {
			changed = append(changed, d)
		}
	}
	w.seenHeld = ids
	for id := range w.decided {
		if !ids[id] {
			delete(w.decided, id)
		}
	}
	changed = append(changed, w.b.add(rec.Entries)...)
	if heldErr != nil {
		return changed, fmt.Errorf("reading the requests the relay holds: %w", heldErr)
	}
	if w.src.Requests == nil {
		return changed, nil
	}
	reqs, err := w.src.Requests()
	if err != nil {
		return changed, fmt.Errorf("reading the relay's log of requests: %w", err)
	}
	evs := make([]event, len(reqs))
	for i, r := range reqs {
		evs[i] = event{at: r.Time, d: Destination{Host: r.Host, Port: r.Port, Method: r.Method, Path: r.Path, Via: ViaRelay, Reason: r.Reason, Command: r.Command}}
	}
	return append(changed, w.reqs.addEvents(evs)...), nil
}

// of is the count d belongs to: the guest's refusals, or the relay's requests.
func (w *Watch) of(d Destination) *blocked {
	if d.Method != "" {
		return w.reqs
	}
	return w.b
}

// List is the destinations to decide on: the held connections first (oldest first), then the
// refused destinations, newest first.
func (w *Watch) List() []Destination {
	w.mu.Lock()
	defer w.mu.Unlock()
	refused := append(w.b.list(), w.reqs.list()...)
	sortNewestFirst(refused)
	return append(w.heldList(), refused...)
}

// heldList is the held connections of the last read not decided on yet, their time left
// counted from the read.
func (w *Watch) heldList() []Destination {
	var out []Destination
	gone := int(time.Since(w.readAt) / time.Second)
	for _, h := range w.held {
		if w.decided[heldKey(netpolicy.ViaProxy, h.ID)] {
			continue
		}
		out = append(out, Destination{Host: h.Host, Port: h.Port, Attempts: 1, First: h.Since, Last: h.Since, Command: h.Command,
			Via: netpolicy.ViaProxy, Held: true, ID: h.ID, SecondsLeft: max(0, h.SecondsLeft-gone)})
	}
	for _, r := range w.heldReqs {
		if w.decided[heldKey(ViaRelay, r.ID)] {
			continue
		}
		out = append(out, Destination{Host: r.Host, Port: r.Port, Method: r.Method, Path: r.Path, Attempts: 1, First: r.Time, Last: r.Time,
			Command: r.Command, Via: ViaRelay, Held: true, ID: r.ID, SecondsLeft: max(0, int(time.Until(r.Deadline)/time.Second))})
	}
	slices.SortStableFunc(out, func(a, b Destination) int { return a.First.Compare(b.First) })
	return out
}

// heldKey names a held connection or request in the watch's sets: the guest's ids and the
// relay's are apart by where they come from (via), whatever a guest's id says.
func heldKey(via, id string) string { return via + " " + id }

// Decide hands the person's decision on the held connection d (netpolicy.DecisionOnce or
// DecisionDeny) to the guest through Source.Decide; d leaves the list. It returns what to say.
func (w *Watch) Decide(ctx context.Context, d Destination, decision string) (string, error) {
	if !d.Held {
		return "", fmt.Errorf("%s is not held: it was refused already (a allows it for the session)", termsafe.String(d.Entry()))
	}
	if err := w.decideHeld(ctx, d, decision); err != nil {
		return "", err
	}
	if decision == netpolicy.DecisionOnce {
		if d.Via == ViaRelay {
			return "allowed " + termsafe.String(d.Entry()) + " once: that request goes through; the next one is held again", nil
		}
		return "allowed " + termsafe.String(d.Entry()) + " once: that connection goes through; the next one is held again", nil
	}
	return "refused " + termsafe.String(d.Entry()) + ": the agent reads that you were asked and refused it", nil
}

// decideHeld hands decision on the held d to the guest's proxy (Source.Decide) or to the
// relay (Source.DecideRequest), by where d is held; d leaves the list.
func (w *Watch) decideHeld(ctx context.Context, d Destination, decision string) error {
	var err error
	switch {
	case d.Via == ViaRelay && w.src.DecideRequest != nil:
		err = w.src.DecideRequest(d.ID, decision)
	case d.Via != ViaRelay && w.src.Decide != nil:
		err = w.src.Decide(ctx, d.ID, decision)
	default:
		return errors.New("deciding on a held connection is not available here (a allows its destination for the session)")
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", decision, termsafe.String(d.Entry()), err)
	}
	w.mu.Lock()
	w.decided[heldKey(d.Via, d.ID)] = true
	w.mu.Unlock()
	return nil
}

// Deny hides d from the list for the rest of the watch: it is refused already.
func (w *Watch) Deny(d Destination) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.of(d).denied[d.Entry()] = true
}

// Allow applies the person's decision on d through Source.Allow; d leaves the list until it
// is refused again. It returns what to say.
func (w *Watch) Allow(ctx context.Context, d Destination, save bool) (string, error) {
	entry, err := exactRule(d)
	if err != nil {
		return "", err
	}
	msg, err := w.src.Allow(ctx, entry, save)
	if err != nil {
		return "", fmt.Errorf("allow %s: %w", termsafe.String(d.Entry()), err)
	}
	if d.Held && d.Via == ViaRelay {
		// The relay checks a connection's requests against the rules it was opened with: the
		// held one goes through by the person's word, the next ones by the new rule.
		if err := w.decideHeld(ctx, d, netpolicy.DecisionOnce); err != nil {
			return msg + "; the held request was not let through: " + err.Error(), nil
		}
		msg += "; the held request goes through"
	}
	w.mu.Lock()
	w.of(d).allowed[d.Entry()] = true
	if d.Held {
		w.decided[heldKey(d.Via, d.ID)] = true // the proxy lets it through under the new policy
	}
	w.mu.Unlock()
	return msg, nil
}

// Policy is the session's policy as recorded now.
func (w *Watch) Policy() string { return w.src.Policy() }

// End says that the watch has stopped (Source.End): what it held is refused now, and nothing
// more is held for it. Call it once the person has left the screen or the stream.
func (w *Watch) End(ctx context.Context) {
	if w.src.End != nil {
		w.src.End(ctx)
	}
}

// exactRule is the rule Allow adds for d: its own entry, or for a request the relay refused,
// the rule for exactly that request (netpolicy.ExactRule: its method and path are the agent's
// to choose, and "PUT+POST", a '*' or a ',' in them would make one key allow more than the
// person sees refused). Such a request is allowed by hand, with the rule read first.
func exactRule(d Destination) (string, error) {
	if d.Method == "" {
		return d.Entry(), nil
	}
	rule, err := netpolicy.ExactRule(d.Host, d.Port, d.Method, d.Path)
	if err != nil {
		return "", fmt.Errorf("%s: %v; allow it by hand with the rule you mean: limactl mcp network INSTANCE allow HOST/PATH:METHOD", termsafe.String(d.Entry()), termsafe.String(err.Error()))
	}
	return rule, nil
}
