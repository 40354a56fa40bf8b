package netwatch

import (
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// Every read brings the log's last entries, overlapping the ones before: each entry is counted
// once, entries at the same time included; allowed ones pass; a denied destination stays
// hidden; an allowed one comes back when refused again.
func TestBlockedCountsEachEntryOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := func(sec int, host string, port int, verdict string) netpolicy.Entry {
		return netpolicy.Entry{Time: t0.Add(time.Duration(sec) * time.Second), Host: host, Port: port, Verdict: verdict, Via: netpolicy.ViaProxy}
	}
	const bl, ok = netpolicy.VerdictBlocked, netpolicy.VerdictAllowed
	b := newBlocked()
	log := []netpolicy.Entry{e(0, "a.test", 443, bl), e(1, "b.test", 80, bl), e(1, "a.test", 443, bl), e(2, "ok.test", 443, ok)}
	got := b.add(log)
	if len(got) != 2 || got[0].Entry() != "a.test:443" || got[0].Attempts != 2 || !got[0].First.Equal(t0) || !got[0].Last.Equal(t0.Add(time.Second)) || got[1].Entry() != "b.test:80" {
		t.Fatalf("first read: %+v", got)
	}
	if got := b.add(log); len(got) != 0 {
		t.Errorf("the same entries again changed %+v", got)
	}
	// The window moved: the oldest entry left it; two more at the newest time counted, one new.
	log = append(log[1:], e(2, "a.test", 443, bl), e(3, "c.test", 443, bl))
	got = b.add(log)
	if len(got) != 2 || got[0].Entry() != "c.test:443" || got[1].Entry() != "a.test:443" || got[1].Attempts != 3 {
		t.Fatalf("second read: %+v", got)
	}
	// Two entries at the same time, the second read later.
	log = append(log, e(4, "d.test", 443, bl))
	b.add(log)
	log = append(log, e(4, "d.test", 443, bl))
	if got := b.add(log); len(got) != 1 || got[0].Attempts != 2 {
		t.Errorf("an entry at the newest time read later: %+v", got)
	}
	b.denied["c.test:443"], b.allowed["a.test:443"] = true, true
	if l := b.list(); len(l) != 2 || l[0].Entry() != "d.test:443" || l[1].Entry() != "b.test:80" {
		t.Errorf("list after deny and allow: %+v", l)
	}
	log = append(log, e(5, "c.test", 443, bl), e(5, "a.test", 443, bl))
	if got := b.add(log); len(got) != 1 || got[0].Entry() != "a.test:443" {
		t.Errorf("after new attempts: %+v (the denied one stays hidden, the allowed one comes back)", got)
	}
	if l := b.list(); len(l) != 3 || l[0].Entry() != "a.test:443" {
		t.Errorf("list: %+v", l)
	}
	if (Destination{Host: "10.0.0.1"}).Entry() != "10.0.0.1" {
		t.Error("a destination without a port is its host")
	}
}
