package tui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
)

// writeWatchFixture writes the demo's record (`net report`'s answer for the user "demo") with
// entries, and its policy.
func writeWatchFixture(t *testing.T, dir, policy string, entries ...netpolicy.Entry) {
	t.Helper()
	tot := netpolicy.NewTotals()
	for _, e := range entries {
		tot.Add(e)
	}
	data, err := json.Marshal(netpolicy.Record{User: "demo", Source: "totals", Summary: tot.Summary(), Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "record.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policy"), []byte(policy+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// "w" in the file list shows the session's refused destinations, as watch does: newest first,
// the guest's hostile host name escaped; a allows the one at the cursor (the session's policy
// has it after, and it leaves the list), d dismisses one; q comes back to the list, and w
// again finds the watch as it was left. Without a watch, w says why and q comes back.
func TestTUIWatchesBlocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	blocked := func(at time.Time, host string, port int) netpolicy.Entry {
		return netpolicy.Entry{Time: at, Host: host, Port: port, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: "not in the allow list"}
	}
	writeWatchFixture(t, dir, "allow:a.test",
		blocked(t0.Add(time.Second), "b.test", 443),
		blocked(t0.Add(2*time.Second), "evil\x1b[2J.test", 443),
		blocked(t0.Add(3*time.Second), "c.test", 8080),
		blocked(t0.Add(4*time.Second), "c.test", 8080))
	s := startTUIAt(t, 140, 30, "", &review.Changeset{Items: []*review.Item{oneHunk(), added()}}, "-watch", dir)
	s.waitFor("> ✓ M README.md", "w: blocked")
	s.keys("w")
	got := s.waitFor("Blocked attempts of the demo session", "policy: allow:a.test", "> c.test:8080", "2 attempts",
		`evil\x1b[2J.test:443`, "b.test:443", "a allow for the session", "q back")
	if strings.Contains(got, "\x1b[2J") {
		t.Errorf("the guest's escape reached the terminal:\n%q", got)
	}
	if i, j := strings.Index(got, "c.test:8080"), strings.Index(got, "b.test:443"); j < i {
		t.Errorf("not newest first:\n%s", got)
	}
	s.keys("a")
	s.waitFor("allowed c.test:8080: policy allow:a.test,c.test:8080 (was allow:a.test)", "policy: allow:a.test,c.test:8080", `> evil\x1b[2J.test:443`)
	b, err := os.ReadFile(filepath.Join(dir, "policy"))
	if err != nil || strings.TrimSpace(string(b)) != "allow:a.test,c.test:8080" {
		t.Errorf("the session's policy after a: %q, %v", b, err)
	}
	s.keys("d")
	got = s.waitFor(`denied evil\x1b[2J.test:443: it stays blocked`, "> b.test:443")
	if strings.Contains(got, "c.test:8080 ") {
		t.Errorf("the allowed destination is still listed:\n%s", got)
	}
	s.keys("q")
	s.waitFor("> ✓ M README.md", "w: blocked")
	s.keys("w")
	if got := s.waitFor("> b.test:443"); strings.Contains(got, "evil") {
		t.Errorf("the dismissed destination came back when w was pressed again:\n%s", got)
	}
	s.keys("Escape")
	s.waitFor("> ✓ M README.md", "w: blocked")
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Error("not aborted")
	}

	// No watch: the help does not offer it, and w says why.
	s = startTUIAt(t, 120, 30, "", &review.Changeset{Items: []*review.Item{oneHunk(), added()}}, "-nowatch", "The session's network policy is open: nothing is refused.")
	if got := s.waitFor("> ✓ M README.md", "v: view diff"); strings.Contains(got, "w: blocked") {
		t.Errorf("the help offers a watch there is not:\n%s", got)
	}
	s.keys("w")
	s.waitFor("The session's network policy is open: nothing is refused.")
	s.keys("q")
	s.waitFor("> ✓ M README.md")
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Error("not aborted")
	}
}
