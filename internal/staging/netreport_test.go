package staging

import (
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

func TestNetworkReportLine(t *testing.T) {
	r := &NetworkReport{Policy: "allow:a.test", Summary: &netpolicy.Summary{
		Blocked: 15000, BytesUp: 52428800, BytesDown: 1234,
		HostsReached:  []netpolicy.HostSummary{{Host: "a.test", Attempts: 1, BytesUp: 52428800, BytesDown: 1234}},
		HostsBlocked:  []netpolicy.HostSummary{{Host: "x.test", Attempts: 14000}, {Host: "y.test", Attempts: 1000}},
		OthersReached: &netpolicy.HostTotal{Hosts: 2, Attempts: 2},
		LastBlocked:   &netpolicy.Entry{Host: "y.test", Port: 443},
	}}
	want := "network policy allow:a.test: the agent reached 3 hosts (a.test), 52.4 MB sent, 1.2 kB received, 15000 attempts blocked (last: y.test:443; hosts: x.test, y.test)"
	if got := r.Line(); got != want {
		t.Errorf("Line:\n got %s\nwant %s", got, want)
	}
	r = &NetworkReport{Policy: "none", Error: "sudo: a password is required"}
	if got := r.Line(); got != "network policy none: the record is unreadable (sudo: a password is required)" {
		t.Errorf("Line: %s", got)
	}
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 52428800: "52.4 MB", 3e12: "3.0 TB"} {
		if got := byteCount(n); got != want {
			t.Errorf("byteCount(%d) = %s, want %s", n, got, want)
		}
	}
}
