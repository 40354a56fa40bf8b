// Package netwatch is the destinations an agent under a network policy was refused, counted
// from its network record as it is read again and again (blocked.go), one watch of them with
// the person's decisions (watch.go), and the screen that shows them live and decides (screen.go):
// used by `limactl mcp watch` and by the review TUI's "w".
package netwatch

import (
	"slices"
	"strconv"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// Destination is one host and port the agent was refused, counted over the record's entries
// the watch has read (guest data: shown only through termsafe).
type Destination struct {
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	Attempts int       `json:"attempts"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	// Via is how the last attempt was refused: netpolicy.ViaProxy or ViaDirect.
	Via    string `json:"via"`
	Reason string `json:"reason,omitempty"`
	// Held: this is a connection the guest's proxy holds while the person decides (o allows
	// it once, d refuses it, a allows its destination for the session); ID names it to the
	// guest, SecondsLeft is how long it is held still.
	Held        bool   `json:"held,omitempty"`
	ID          string `json:"id,omitempty"`
	SecondsLeft int    `json:"seconds_left,omitempty"`
	// Method and Path are those of a request the session's relay refused under the network
	// rules (Via ViaRelay): HTTPS to a host that only rules name, read on the host.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Command is the command line of the process that made the last attempt, as the guest's
	// proxy found it ("" when it did not: a direct attempt, a request the relay refused). The
	// agent's text: shown escaped, never acted on.
	Command string `json:"command,omitempty"`
}

// ViaRelay is the Via of a request the session's relay on the host refused under the rules.
const ViaRelay = "relay"

// Entry is the destination as a policy names it: HOST:PORT (HOST when the port is unknown);
// for a request the relay refused, the rule for exactly it, HOST:PORT/PATH:METHOD.
func (d Destination) Entry() string {
	if d.Method != "" {
		return d.Host + ":" + strconv.Itoa(d.Port) + d.Path + ":" + d.Method
	}
	if d.Port <= 0 {
		return d.Host
	}
	return d.Host + ":" + strconv.Itoa(d.Port)
}

// blocked counts the blocked entries of the record as the watch reads it again and again:
// each read brings the raw log's last entries, oldest first, and only those not counted yet
// are added (after the newest time counted, or at that time beyond the ones counted at it).
type blocked struct {
	byEntry map[string]*Destination
	// seen is the time of the newest entry counted; atSeen how many entries at that time.
	seen   time.Time
	atSeen int
	// hidden are the destinations the person decided on: denied stays hidden; an allowed one
	// comes back when it is refused again.
	denied, allowed map[string]bool
}

func newBlocked() *blocked {
	return &blocked{byEntry: map[string]*Destination{}, denied: map[string]bool{}, allowed: map[string]bool{}}
}

// add counts the blocked entries not counted yet and returns the destinations they changed,
// in the order of their last attempt, hidden ones left out.
func (b *blocked) add(entries []netpolicy.Entry) []Destination {
	var evs []event
	for _, e := range entries {
		if e.Verdict == netpolicy.VerdictBlocked {
			evs = append(evs, event{at: e.Time, d: Destination{Host: e.Host, Port: e.Port, Via: e.Via, Reason: e.Reason, Command: e.Command}})
		}
	}
	return b.addEvents(evs)
}

// event is one refused attempt: its time, and its destination (no counts).
type event struct {
	at time.Time
	d  Destination
}

// addEvents counts the events not counted yet (those of a source read again and again, oldest
// first: after the newest time counted, or at that time beyond the ones counted at it) and
// returns the destinations they changed, newest first, hidden ones left out.
func (b *blocked) addEvents(evs []event) []Destination {
	changed := map[string]bool{}
	at := 0
	newest, atNewest := b.seen, b.atSeen
	for _, e := range evs {
		if e.at.Equal(b.seen) {
			at++
			if at <= b.atSeen {
				continue
			}
		} else if e.at.Before(b.seen) {
			continue
		}
		switch {
		case e.at.After(newest):
			newest, atNewest = e.at, 1
		case e.at.Equal(newest):
			atNewest++
		}
		key := e.d.Entry()
		cur := b.byEntry[key]
		if cur == nil {
			cur = &Destination{Host: e.d.Host, Port: e.d.Port, Method: e.d.Method, Path: e.d.Path, First: e.at}
			b.byEntry[key] = cur
		}
		cur.Attempts++
		if !e.at.Before(cur.Last) {
			cur.Last, cur.Via, cur.Reason, cur.Command = e.at, e.d.Via, e.d.Reason, e.d.Command
		}
		delete(b.allowed, key)
		changed[key] = true
	}
	b.seen, b.atSeen = newest, atNewest
	var out []Destination
	for key := range changed {
		if !b.denied[key] {
			out = append(out, *b.byEntry[key])
		}
	}
	sortNewestFirst(out)
	return out
}

// list is the destinations to decide on, newest first.
func (b *blocked) list() []Destination {
	var out []Destination
	for key, d := range b.byEntry {
		if !b.denied[key] && !b.allowed[key] {
			out = append(out, *d)
		}
	}
	sortNewestFirst(out)
	return out
}

func sortNewestFirst(ds []Destination) {
	slices.SortFunc(ds, func(a, b Destination) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		if a.Entry() < b.Entry() {
			return -1
		}
		if a.Entry() > b.Entry() {
			return 1
		}
		return 0
	})
}
