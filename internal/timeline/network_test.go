package timeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

const testUser = "lmcp-0123456789ab"

// guestRecord is `net report`'s answer as the guest writes it (the record's counts over all
// of entries, the last keep of them), read back as the host reads it: checked by
// netpolicy.ParseRecord.
func guestRecord(t *testing.T, entries []netpolicy.Entry, keep int) netpolicy.Record {
	t.Helper()
	tot := netpolicy.NewTotals()
	for _, e := range entries {
		tot.Add(e)
	}
	if keep < len(entries) {
		entries = entries[len(entries)-keep:]
	}
	data, err := json.Marshal(netpolicy.Record{User: testUser, Source: "totals", Summary: tot.Summary(), Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := netpolicy.ParseRecord(data, testUser)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func networkEvents(t *testing.T, dir string) []Event {
	t.Helper()
	tl, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Event
	for _, e := range tl.Events {
		if e.Kind == Network {
			out = append(out, e)
		}
	}
	return out
}

// The agent's connections become network events: one per destination and verdict, counted,
// from first to last; read again, nothing is written twice; attempts the record counted but
// no longer itemises are said; what came before the timeline began is not the session's.
func TestRecordNetwork(t *testing.T) {
	dir := t.TempDir()
	l := Open(dir, "serve", nil)
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	old := netpolicy.Entry{Time: t0.Add(-time.Hour), Host: "before.test", Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy}
	l.Record(Event{Time: t0, Kind: ServeStart})
	blocked := func(at time.Duration, host string) netpolicy.Entry {
		return netpolicy.Entry{Time: t0.Add(at), Host: host, Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaDirect, Reason: "not in the allow list"}
	}
	all := []netpolicy.Entry{old,
		blocked(time.Second, "evil.test"),
		{Time: t0.Add(2 * time.Second), Host: "pypi.test", Port: 443, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, BytesUp: 1000, BytesDown: 3_400_000},
		blocked(3*time.Second, "evil.test"),
		blocked(4*time.Second, "evil.test"),
	}
	n, err := l.RecordNetwork(guestRecord(t, all, 500), time.Now())
	if err != nil || n != 2 {
		t.Fatalf("first read: %d events, %v", n, err)
	}
	got := networkEvents(t, dir)
	if len(got) != 2 {
		t.Fatalf("events: %+v", got)
	}
	ev := got[0]
	if ev.Host != "evil.test" || ev.Port != 443 || ev.Verdict != "blocked" || ev.Via != "direct" || ev.Count != 3 ||
		!ev.Time.Equal(t0.Add(time.Second)) || !ev.Last.Equal(t0.Add(4*time.Second)) || ev.Note != "not in the allow list" || ev.Source != "serve" {
		t.Errorf("the blocked event: %+v", ev)
	}
	if e := got[1]; e.Host != "pypi.test" || e.Verdict != "allowed" || e.Count != 1 || e.BytesUp != 1000 || e.BytesDown != 3_400_000 {
		t.Errorf("the allowed event: %+v", e)
	}
	if d := Describe(&got[0]); !strings.Contains(d, "network: blocked evil.test:443 (direct), 3 attempts until ") || !strings.HasSuffix(d, " — not in the allow list") {
		t.Errorf("Describe: %s", d)
	}
	if d := Describe(&got[1]); d != "network: reached pypi.test:443, 1 connection, 1.0 kB sent, 3.4 MB received" {
		t.Errorf("Describe: %s", d)
	}
	// Read again, with one more entry of the same second as the last (written concurrently
	// by the proxy, it came after the read): only it is new.
	again := append(all[:len(all):len(all)], blocked(4*time.Second-time.Millisecond, "late.test"))
	if n, err := l.RecordNetwork(guestRecord(t, again, 500), time.Now()); err != nil || n != 1 {
		t.Fatalf("second read: %d events, %v", n, err)
	}
	if got := networkEvents(t, dir); len(got) != 3 || got[2].Host != "late.test" {
		t.Fatalf("after the second read: %+v", got)
	}
	if n, err := l.RecordNetwork(guestRecord(t, again, 500), time.Now()); err != nil || n != 0 {
		t.Fatalf("the same record again: %d events, %v", n, err)
	}
	// 600 more refusals while nobody read: the record keeps the last 500 entries; the
	// other 100 are counted, not itemised.
	more := again
	for i := range 600 {
		more = append(more, blocked(time.Minute+time.Duration(i)*time.Millisecond, "flood.test"))
	}
	if n, err := l.RecordNetwork(guestRecord(t, more, 500), time.Now()); err != nil || n != 2 {
		t.Fatalf("after a flood: %d events, %v", n, err)
	}
	got = networkEvents(t, dir)
	flood, rest := got[3], got[4]
	if flood.Host != "flood.test" || flood.Count != 500 || rest.Host != "" || rest.Count != 100 || rest.Verdict != "blocked" || !strings.Contains(rest.Note, "not itemised") {
		t.Errorf("the flood: %+v\n%+v", flood, rest)
	}
	tl, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Every attempt of the session counted once (the one before the timeline began is not
	// the session's).
	if tl.Counts.NetBlocked != 604 || tl.Counts.NetAllowed != 1 {
		t.Errorf("counts: %+v", tl.Counts)
	}
	for _, e := range tl.Events {
		if e.Host == "before.test" {
			t.Errorf("an attempt from before the timeline began was recorded: %+v", e)
		}
	}
}

// The record is the guest's: an entry with a clock far ahead is not itemised (it would hide
// what follows), a long or hostile host is capped and escaped when shown, and an entry that is
// not one is skipped.
func TestRecordNetworkHostileRecord(t *testing.T) {
	dir := t.TempDir()
	l := Open(dir, "serve", nil)
	now := time.Now().UTC()
	l.Record(Event{Time: now.Add(-time.Minute), Kind: ServeStart})
	// (ParseRecord refuses a host longer than 512 bytes: the whole record.)
	hostile := "evil\x1b]0;pwned\x07.test\n" + strings.Repeat("x", 480)
	entries := []netpolicy.Entry{
		{Time: now.Add(48 * time.Hour), Host: "future.test", Port: 80, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaDirect},
		{Time: now.Add(-time.Second), Host: hostile, Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: strings.Repeat("r", 5000)},
	}
	rec := guestRecord(t, entries, 500)
	rec.Entries = append(rec.Entries, netpolicy.Entry{Time: now, Host: "", Port: 1, Verdict: "maybe", Via: "x"}) // not an entry
	if _, err := l.RecordNetwork(rec, now); err != nil {
		t.Fatal(err)
	}
	got := networkEvents(t, dir)
	if len(got) != 1 {
		t.Fatalf("events: %+v", got)
	}
	e := got[0]
	if len(e.Host) > maxHostBytes+40 || len(e.Note) > maxReasonBytes+40 || !strings.HasPrefix(e.Host, "evil\x1b]0;pwned") {
		t.Errorf("not capped: host %d bytes, note %d bytes", len(e.Host), len(e.Note))
	}
	// A later entry still comes (the future one did not move the cursor).
	entries = append(entries, netpolicy.Entry{Time: now.Add(time.Second), Host: "next.test", Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy})
	if _, err := l.RecordNetwork(guestRecord(t, entries, 500), now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := networkEvents(t, dir); len(got) != 2 || got[1].Host != "next.test" {
		t.Errorf("after a future entry: %+v", got)
	}
}

// Two servers of one session read the same record at once: each attempt is written once.
func TestRecordNetworkConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now().Add(-time.Minute).UTC()
	Open(dir, "serve", nil).Record(Event{Time: t0, Kind: ServeStart})
	var entries []netpolicy.Entry
	for i := range 50 {
		entries = append(entries, netpolicy.Entry{Time: t0.Add(time.Duration(i) * 2 * NetGap), Host: fmt.Sprintf("h%d.test", i), Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy})
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := Open(dir, "serve", nil)
			for k := 10; k <= 50; k += 10 {
				if _, err := l.RecordNetwork(guestRecord(t, entries[:k-i%3], 500), time.Now().Add(3*time.Hour)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for _, e := range networkEvents(t, dir) {
		seen[e.Host] += e.Count
	}
	for _, e := range entries {
		if seen[e.Host] != 1 {
			t.Errorf("%s recorded %d times", e.Host, seen[e.Host])
		}
	}
	if len(seen) != len(entries) {
		t.Errorf("%d hosts recorded, want %d: %v", len(seen), len(entries), seen)
	}
	if _, err := os.Stat(filepath.Join(dir, netCursorName)); err != nil {
		t.Error(err)
	}
}
