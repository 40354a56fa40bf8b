package netpolicy

import (
	"encoding/json"
	"errors"
	"sort"
	"time"
)

// Totals is a user's network record: what its agent reached and what was refused, counted by
// root (the proxy) as it happens and kept in NAME.totals.json, apart from the raw log, which
// rotates. No volume of noise removes a host from it: the hosts are capped (MaxTotalsHosts of
// each kind), and the ones past the cap are counted in an "others" bucket.
type Totals struct {
	Version    int       `json:"version"`
	First      time.Time `json:"first"`
	Last       time.Time `json:"last"`
	Attempts   int       `json:"attempts"`
	Allowed    int       `json:"allowed"`
	Blocked    int       `json:"blocked"`
	Suppressed int       `json:"suppressed"` // refused attempts left out of the raw log (rate limit)
	BytesUp    int64     `json:"bytes_up"`
	BytesDown  int64     `json:"bytes_down"`
	// Reached are the hosts connected to, Refused the hosts refused, by name.
	Reached       map[string]*HostTotal `json:"reached"`
	Refused       map[string]*HostTotal `json:"refused"`
	OthersReached HostTotal             `json:"others_reached"`
	OthersRefused HostTotal             `json:"others_refused"`
	LastBlocked   *Entry                `json:"last_blocked,omitempty"`
}

// HostTotal is one host's count (or, in an "others" bucket, Hosts hosts').
type HostTotal struct {
	Hosts     int       `json:"hosts,omitempty"`
	Attempts  int       `json:"attempts"`
	BytesUp   int64     `json:"bytes_up,omitempty"`
	BytesDown int64     `json:"bytes_down,omitempty"`
	Last      time.Time `json:"last"`
}

const (
	// TotalsVersion is the version of the record file this program writes and reads.
	TotalsVersion = 1
	// MaxTotalsHosts caps each list of hosts in a record.
	MaxTotalsHosts = 200
)

// NewTotals is an empty record.
func NewTotals() *Totals {
	return &Totals{Version: TotalsVersion, Reached: map[string]*HostTotal{}, Refused: map[string]*HostTotal{}}
}

// Add counts one entry.
func (t *Totals) Add(e Entry) {
	if t.First.IsZero() || e.Time.Before(t.First) {
		t.First = e.Time
	}
	if e.Time.After(t.Last) {
		t.Last = e.Time
	}
	t.Attempts++
	if e.Verdict == VerdictAllowed {
		t.Allowed++
		t.BytesUp += e.BytesUp
		t.BytesDown += e.BytesDown
		if e.Reason == "" { // allowed, and the connection was made
			h := bucket(t.Reached, &t.OthersReached, e.Host)
			h.Attempts++
			h.BytesUp += e.BytesUp
			h.BytesDown += e.BytesDown
			if e.Time.After(h.Last) {
				h.Last = e.Time
			}
		}
		return
	}
	t.Blocked++
	h := bucket(t.Refused, &t.OthersRefused, e.Host)
	h.Attempts++
	if e.Time.After(h.Last) {
		h.Last = e.Time
	}
	last := e
	t.LastBlocked = &last
}

// bucket is host's count, or the others bucket once the list is full.
func bucket(hosts map[string]*HostTotal, others *HostTotal, host string) *HostTotal {
	if h, ok := hosts[host]; ok {
		return h
	}
	if len(hosts) >= MaxTotalsHosts {
		others.Hosts++ // counts arrivals past the cap: a host seen twice there counts twice
		return others
	}
	h := &HostTotal{}
	hosts[host] = h
	return h
}

// Summary is what the record says, for status and review.
func (t *Totals) Summary() Summary {
	s := Summary{Attempts: t.Attempts, Allowed: t.Allowed, Blocked: t.Blocked, BytesUp: t.BytesUp, BytesDown: t.BytesDown,
		Suppressed: t.Suppressed, HostsReached: hostTotals(t.Reached), HostsBlocked: hostTotals(t.Refused)}
	if !t.First.IsZero() {
		first, last := t.First, t.Last
		s.First, s.Last = &first, &last
	}
	if t.OthersReached.Attempts > 0 {
		o := t.OthersReached
		s.OthersReached = &o
	}
	if t.OthersRefused.Attempts > 0 {
		o := t.OthersRefused
		s.OthersBlocked = &o
	}
	if t.LastBlocked != nil {
		last := *t.LastBlocked
		s.LastBlocked = &last
	}
	return s
}

func hostTotals(m map[string]*HostTotal) []HostSummary {
	if len(m) == 0 {
		return nil
	}
	list := make([]HostSummary, 0, len(m))
	for h, n := range m {
		list = append(list, HostSummary{Host: h, Attempts: n.Attempts, BytesUp: n.BytesUp, BytesDown: n.BytesDown})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].Attempts != list[j].Attempts {
			return list[i].Attempts > list[j].Attempts
		}
		return list[i].Host < list[j].Host
	})
	return list
}

// ParseTotals reads a record file's content (root's, read as hostile all the same: the caller
// caps what it reads; this checks what it holds and drops hosts that make no sense).
func ParseTotals(data []byte) (*Totals, error) {
	t := NewTotals()
	if err := json.Unmarshal(data, t); err != nil {
		return nil, err
	}
	if t.Version != TotalsVersion || len(t.Reached) > MaxTotalsHosts || len(t.Refused) > MaxTotalsHosts ||
		t.Attempts < 0 || t.Allowed < 0 || t.Blocked < 0 || t.BytesUp < 0 || t.BytesDown < 0 {
		return nil, ErrTotalsVersion
	}
	if t.Reached == nil {
		t.Reached = map[string]*HostTotal{}
	}
	if t.Refused == nil {
		t.Refused = map[string]*HostTotal{}
	}
	for _, m := range []map[string]*HostTotal{t.Reached, t.Refused} {
		for h, n := range m {
			if n == nil || h == "" || len(h) > 512 {
				delete(m, h)
			}
		}
	}
	return t, nil
}

// ErrTotalsVersion says a record file is not one this version writes (or is out of range).
var ErrTotalsVersion = errors.New("not a network record this version writes")
