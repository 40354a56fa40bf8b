package reviewcmd_test

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// writeNetRecord writes `net report`'s answer for f's session with entries into the guest,
// beside the session's copy (removed with it), and returns its path.
func writeNetRecord(t *testing.T, f *sessiontest.Fixture, entries ...netpolicy.Entry) string {
	t.Helper()
	tot := netpolicy.NewTotals()
	for _, e := range entries {
		tot.Add(e)
	}
	user := staging.AgentUser(staging.SessionID(f.Workdir))
	data, err := json.Marshal(netpolicy.Record{User: user, Source: "totals", Summary: tot.Summary(), Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	p := path.Join(path.Dir(f.GuestPath), "netrecord.json")
	conn := guesttest.Connect(t, f.Srv, guest.Options{NoLoginShell: true})
	if err := conn.WriteFile(context.Background(), p, data, 0o644, true); err != nil {
		t.Fatal(err)
	}
	return p
}

// storeNetwork sets the policy recorded with f's session.
func storeNetwork(t *testing.T, f *sessiontest.Fixture, network string) {
	t.Helper()
	st, _, err := f.Store.Load(f.Workdir)
	if err != nil {
		t.Fatal(err)
	}
	st.Network = network
	if err := f.Store.Save(st, nil); err != nil {
		t.Fatal(err)
	}
}

// The real review in a real terminal, its session under a policy: w in the file list shows
// the destination the agent was refused, read from the guest's record through the review's
// connection, with the session's policy; a allows it through the change `network allow`
// makes, which this "guest" refuses (its user has no sudo to put a policy in place: watch's
// own test, on a stopped instance, sees the change recorded), and the refusal says why and
// leaves the session's policy as it was; q comes back to the list. Under an open policy, w
// says there is nothing to watch and how to set a policy.
func TestReviewTUIWatchesBlocked(t *testing.T) {
	f := newChanges(t)
	storeNetwork(t, f, "allow:a.test")
	t0 := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	record := writeNetRecord(t, f, netpolicy.Entry{Time: t0, Host: "b.test", Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: "not in the allow list"})
	const wait = time.Minute
	s := startCompare(t, f, 140, 40, "", "LMCP_H_RECORD="+record)
	s.WaitFor(wait, "M a.txt", "w: blocked")
	s.Keys("w")
	s.WaitFor(wait, "Blocked attempts of "+f.Workdir, "policy: allow:a.test", "> b.test:443", "1 attempt", "q back")
	s.Keys("a")
	s.WaitFor(wait, "refused: allow b.test:443: a network policy needs passwordless sudo", "> b.test:443")
	st, _, err := f.Store.Load(f.Workdir)
	if err != nil {
		t.Fatal(err)
	}
	if got := staging.NetworkOf(st); got != "allow:a.test" {
		t.Errorf("the session's policy after a refused allow: %q", got)
	}
	s.Keys("q")
	s.WaitFor(wait, "M a.txt", "w: blocked")
	s.Keys("Escape")
	s.WaitFor(wait, "Aborted: nothing was applied", "review failed")
	hostUntouched(t, f)

	// Open: no key in the help, and w says why.
	g := newChanges(t)
	s = startCompare(t, g, 140, 40, "")
	if scr := s.WaitFor(wait, "M a.txt", "v: view diff"); strings.Contains(scr, "w: blocked") {
		t.Errorf("the help offers a watch under an open policy:\n%s", scr)
	}
	s.Keys("w")
	s.WaitFor(wait, "network policy is open: nothing is refused", "limactl mcp serve --network=none")
	s.Keys("q")
	s.WaitFor(wait, "M a.txt")
	s.Keys("Escape")
	s.WaitFor(wait, "Aborted: nothing was applied", "review failed")
}
