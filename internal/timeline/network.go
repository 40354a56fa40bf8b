package timeline

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/fsutil"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// The network events of a session come from the guest's network record (netpolicy.Record:
// the raw log's last entries and the counts root keeps), which serve reads through the Lima
// user's sudo after the agent's commands, and copies into the timeline with RecordNetwork. A
// cursor beside the timeline says how far the record was copied, so that each attempt is
// written once, by whichever server of the session reads it first.

const (
	netCursorName = "timeline-net.json"
	netLockName   = "timeline-net.lock"
	// NetGap splits a destination's attempts into events: attempts further apart than this
	// are two events (a command that fetched at its start and again at its end).
	NetGap = time.Minute
	// netFuture is how far past the host's clock an entry may be (the guest's clock differs a
	// little): a later one is not itemised, so that a wrong clock cannot hide what follows.
	netFuture = time.Hour
	// maxHostBytes and maxReasonBytes cap what an event keeps of the guest's text.
	maxHostBytes   = 256
	maxReasonBytes = 256
	// netOverlap is how much older than the last entry copied a new one may be: the proxy's
	// connections take their time and write their entries concurrently.
	netOverlap = 2 * time.Second
)

// netCursor is how far a session's network record was copied into its timeline.
type netCursor struct {
	// Last is the time of the last entry copied; Seen identifies the entries copied that are
	// at most netOverlap older (entryID): the next read copies the entries from
	// Last-netOverlap on that are not among them.
	Last time.Time   `json:"last"`
	Seen []seenEntry `json:"seen,omitempty"`
	// Allowed and Blocked are the record's counts when it was last read: what they grew by
	// beyond the entries copied is recorded as attempts not itemised.
	Allowed int `json:"allowed"`
	Blocked int `json:"blocked"`
}

// RecordNetwork appends to the timeline, as network events, the attempts of rec (the
// guest's network record, checked by netpolicy.ParseRecord) it does not hold yet: one event
// per destination and verdict, its attempts counted, from the first to the last (split where
// they are more than NetGap apart). Attempts the record counted but whose entries it no longer
// holds (the raw log keeps its last entries, and leaves out repeated refusals) are one event
// per verdict without a host. now is the host's clock. It returns how many events it wrote.
//
// The first read of a session copies only the entries from when its timeline began (the
// agent user's record outlives a discarded session of the same name).
func (l *Log) RecordNetwork(rec netpolicy.Record, now time.Time) (int, error) {
	if l == nil {
		return 0, nil
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return 0, err
	}
	lock, err := os.OpenFile(filepath.Join(l.dir, netLockName), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, err
	}
	defer lock.Close()
	if err := flock(lock, syscall.LOCK_EX); err != nil {
		return 0, err
	}
	cur, fresh, err := readNetCursor(l.dir)
	if err != nil {
		return 0, err
	}
	var floor time.Time
	if fresh {
		floor = began(l.dir)
	}
	seen := map[string]bool{}
	for _, e := range cur.Seen {
		seen[e.ID] = true
	}
	var entries []netpolicy.Entry
	next := netCursor{Last: cur.Last}
	var copied []seenEntry
	for _, e := range rec.Entries {
		if _, ok := checkEntry(e); !ok || e.Time.After(now.Add(netFuture)) || e.Time.Before(floor) || e.Time.Before(cur.Last.Add(-netOverlap)) {
			continue
		}
		id := entryID(e)
		if seen[id] {
			continue
		}
		seen[id] = true
		entries = append(entries, e)
		copied = append(copied, seenEntry{ID: id, Time: e.Time})
		if e.Time.After(next.Last) {
			next.Last = e.Time
		}
	}
	// The entries copied near the new cursor are remembered, to be known again at the next
	// read (entries written at once by two of the proxy's connections may come in either
	// order).
	for _, e := range append(cur.Seen, copied...) {
		if !e.Time.Before(next.Last.Add(-netOverlap)) && len(next.Seen) < netpolicy.MaxReportEntries {
			next.Seen = append(next.Seen, e)
		}
	}
	events := NetworkEvents(entries)
	s := rec.Summary
	// The counts only grow; a smaller one is a record read before the last one copied (by
	// another server of the session, which took the lock first).
	next.Allowed, next.Blocked = max(s.Allowed, cur.Allowed), max(s.Blocked, cur.Blocked)
	// A record from before the counts were kept ("log": counted over what the rotating raw log
	// holds) cannot say what it no longer itemises.
	if !fresh && rec.Source == "totals" {
		var newAllowed, newBlocked int
		for _, e := range entries {
			if e.Verdict == netpolicy.VerdictAllowed {
				newAllowed++
			} else {
				newBlocked++
			}
		}
		at := now
		if s.Last != nil && !s.Last.After(now.Add(netFuture)) {
			at = *s.Last
		}
		for _, v := range []struct {
			verdict string
			n       int
		}{{netpolicy.VerdictAllowed, s.Allowed - cur.Allowed - newAllowed}, {netpolicy.VerdictBlocked, s.Blocked - cur.Blocked - newBlocked}} {
			if v.n > 0 {
				events = append(events, Event{Time: at, Kind: Network, Verdict: v.verdict, Count: v.n,
					Note: fmt.Sprintf("%d attempts %s not itemised: the guest's log keeps its last %d entries and leaves out repeated refusals", v.n, v.verdict, netpolicy.MaxReportEntries)})
			}
		}
	} // else: a first read (what came before the timeline is not the session's)
	for _, e := range events {
		l.Record(e)
	}
	data, _ := json.Marshal(next)
	if err := fsutil.WriteFileAtomic(filepath.Join(l.dir, netCursorName), data, 0o600); err != nil {
		return len(events), err
	}
	return len(events), nil
}

// NetworkEvents makes the events of entries (oldest first): one per destination, verdict,
// route and reason, counting its attempts, split where they are more than NetGap apart; in
// the order of their first attempts. The guest's text is capped (the encoder escapes it).
func NetworkEvents(entries []netpolicy.Entry) []Event {
	var out []Event
	open := map[string]int{} // destination key → its event in out
	for _, raw := range entries {
		e, ok := checkEntry(raw)
		if !ok {
			continue
		}
		key := fmt.Sprintf("%s\x00%d\x00%s\x00%s\x00%s", e.Host, e.Port, e.Verdict, e.Via, e.Reason)
		if i, ok := open[key]; ok && e.Time.Sub(out[i].Last) <= NetGap && !e.Time.Before(out[i].Time) {
			ev := &out[i]
			ev.Count++
			if e.Time.After(ev.Last) {
				ev.Last = e.Time
			}
			ev.BytesUp += e.BytesUp
			ev.BytesDown += e.BytesDown
			continue
		}
		open[key] = len(out)
		out = append(out, Event{Time: e.Time, Last: e.Time, Kind: Network, Host: e.Host, Port: e.Port, Verdict: e.Verdict,
			Via: e.Via, Count: 1, BytesUp: e.BytesUp, BytesDown: e.BytesDown, Note: e.Reason})
	}
	return out
}

// checkEntry is e with its text capped, or false when it is not an entry (as
// netpolicy.ParseEntry says of a log line).
func checkEntry(e netpolicy.Entry) (netpolicy.Entry, bool) {
	if e.Host == "" || e.Time.IsZero() || (e.Verdict != netpolicy.VerdictAllowed && e.Verdict != netpolicy.VerdictBlocked) ||
		(e.Via != netpolicy.ViaProxy && e.Via != netpolicy.ViaDirect) || e.Port < 0 || e.Port > 65535 || e.BytesUp < 0 || e.BytesDown < 0 {
		return e, false
	}
	e.Host = capString(e.Host, maxHostBytes)
	e.Reason = capString(e.Reason, maxReasonBytes)
	e.Time = e.Time.UTC()
	return e, true
}

// seenEntry is an entry copied: its entryID and time.
type seenEntry struct {
	ID   string    `json:"id"`
	Time time.Time `json:"t"`
}

// readNetCursor reads the cursor; fresh says there is none yet.
func readNetCursor(dir string) (netCursor, bool, error) {
	var c netCursor
	data, err := os.ReadFile(filepath.Join(dir, netCursorName))
	if errors.Is(err, fs.ErrNotExist) {
		return c, true, nil
	}
	if err != nil {
		return c, false, err
	}
	if err := json.Unmarshal(data, &c); err != nil || len(c.Seen) > netpolicy.MaxReportEntries || c.Allowed < 0 || c.Blocked < 0 {
		// Ours, but damaged (a full disk): start again from the timeline's beginning would
		// copy entries twice; from now on is the lesser harm.
		return netCursor{Last: time.Now().UTC()}, true, nil
	}
	return c, false, nil
}

// entryID identifies an entry (its time has nanoseconds: two attempts are two entries).
func entryID(e netpolicy.Entry) string {
	data, _ := json.Marshal(e)
	return lineID(data)
}

// began is when the timeline in dir began: its first event (of the oldest generation kept,
// or the totals' first of those dropped); zero when it has none.
func began(dir string) time.Time {
	if tot, err := readTotals(dir); err == nil && !tot.Dropped.First.IsZero() {
		return tot.Dropped.First
	}
	for _, name := range []string{OldName, FileName} {
		if t, ok := firstEventTime(filepath.Join(dir, name)); ok {
			return t
		}
	}
	return time.Time{}
}

// firstEventTime is the time of the first event of a timeline file.
func firstEventTime(path string) (time.Time, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for range 16 { // a few unreadable lines at most
		line, _, complete, err := readLine(r, MaxLineBytes*4)
		if complete && line != nil {
			var e Event
			if json.Unmarshal(line, &e) == nil && e.Kind != "" && !e.Time.IsZero() {
				return e.Time, true
			}
		}
		if err != nil {
			break
		}
	}
	return time.Time{}, false
}
