package statuscmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe/termsafetest"
)

// The escape-class sweep for what status prints from the guest besides names and labels: the
// hosts of the network log (the agent's to choose: any name it connects to), the error of a
// pending count and of a checkpoint list (runner errors that quote the guest). Printed on a
// terminal, none of it is raw.
func TestStatusPrintsGuestTextEscaped(t *testing.T) {
	var log bytes.Buffer
	for i, c := range termsafetest.Classes {
		verdict := netpolicy.VerdictBlocked
		if i%2 == 0 {
			verdict = netpolicy.VerdictAllowed
		}
		b, _ := json.Marshal(netpolicy.Entry{Time: time.Unix(1700000000, 0), Host: "h" + c.Sample, Port: 443, Verdict: verdict, Via: netpolicy.ViaProxy})
		log.Write(append(b, '\n'))
	}
	sum, _, err := netpolicy.ReadLog(&log, 0)
	if err != nil || sum.Attempts != len(termsafetest.Classes) {
		t.Fatalf("the log: %v, %d attempts", err, sum.Attempts)
	}
	all := termsafetest.All()
	sts := []staging.SessionStatus{
		{Workdir: "/w", GuestPath: "/w", PendingTotal: 1, Pending: map[staging.Kind]int{staging.Added: 1}, Network: &staging.NetworkReport{Policy: "allow:example.com", Summary: &sum},
			Checkpoints: []runnerproto.CkptInfo{{ID: "1", Label: all}}},
		{Workdir: "/v", GuestPath: "/v", PendingTotal: -1, Error: "the guest runner failed: " + all, Network: &staging.NetworkReport{Policy: "none", Error: "reading the network log: " + all},
			CheckpointsError: "listing: " + all},
	}
	ios, _, out, _ := iostreams.Test()
	ios.SetTTY(false, true)
	printStatus(ios.Out, "default", sts, nil, nil, nil)
	termsafetest.Check(t, "status", out.Bytes())
	if !strings.Contains(out.String(), "network:") || !strings.Contains(out.String(), "pending:    unknown") {
		t.Errorf("status:\n%s", out)
	}
	// Not on a terminal (a pipe, a file), the escaping done where the text is printed still holds.
	ios, _, out, _ = iostreams.Test()
	printStatus(ios.Out, "default", sts, nil, nil, nil)
	termsafetest.Check(t, "status into a pipe", out.Bytes())
}
