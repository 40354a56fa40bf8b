package logcmd_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/logcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// The agent's connections are in the log among the calls, in the order they happened: a
// blocked attempt after the command that made it began and before the next call, although
// serve wrote it after both; readable (the guest's host name escaped) and as JSON; counted
// in the totals.
func TestLogNetwork(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	dir := f.Store.SessionDir(staging.SessionID(f.Workdir))
	tl := timeline.Open(dir, "serve", nil)
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	zero, six := 0, 6
	tl.Record(timeline.Event{Time: t0, Kind: timeline.ServeStart, Note: "network policy allow:pypi.test"})
	tl.Record(timeline.Event{Time: t0.Add(time.Second), Kind: timeline.Call, Tool: "run_shell_command", Command: "pip install x", DurationMS: 9000, Exit: &zero})
	tl.Record(timeline.Event{Time: t0.Add(20 * time.Second), Kind: timeline.Call, Tool: "run_shell_command", Command: "curl https://evil.test", DurationMS: 500, Exit: &six})
	// The call after them, recorded before serve read the record.
	tl.Record(timeline.Event{Time: t0.Add(30 * time.Second), Kind: timeline.Call, Tool: "write_file", Paths: []string{"a.txt"}, DurationMS: 3})
	entries := []netpolicy.Entry{
		{Time: t0.Add(5 * time.Second), Host: "pypi.test", Port: 443, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, BytesUp: 2000, BytesDown: 5_000_000},
		{Time: t0.Add(21 * time.Second), Host: "evil\x1b[2J.test", Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: "not in the allow list"},
		{Time: t0.Add(21*time.Second + 100*time.Millisecond), Host: "evil\x1b[2J.test", Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: "not in the allow list"},
	}
	tot := netpolicy.NewTotals()
	for _, e := range entries {
		tot.Add(e)
	}
	data, _ := json.Marshal(netpolicy.Record{User: "lmcp-0123456789ab", Source: "totals", Summary: tot.Summary(), Entries: entries})
	rec, err := netpolicy.ParseRecord(data, "lmcp-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tl.RecordNetwork(rec, time.Now()); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, f, logcmd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	order := []string{
		"run_shell_command `pip install x`",
		"serve   network: reached pypi.test:443, 1 connection, 2.0 kB sent, 5.0 MB received",
		"run_shell_command `curl https://evil.test`",
		"serve   network: blocked evil\\x1b[2J.test:443 (proxy), 2 attempts until ",
		"write_file a.txt",
		"6 events: 3 tool calls (2 shell commands), 1 failed; 9.5 s in calls and commands; network: 1 attempt allowed, 2 attempts blocked.",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("log lacks %q after byte %d:\n%s", want, at, out)
		}
		at += i + len(want)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("the guest's escape reached the output:\n%q", out)
	}
	// --json: the same order, the documented fields.
	out, err = run(t, f, logcmd.Options{JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var blocked map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		kinds = append(kinds, m["kind"].(string))
		if m["verdict"] == "blocked" {
			blocked = m
		}
	}
	if got := strings.Join(kinds, " "); got != "serve_start call network call network call" {
		t.Errorf("--json order: %s", got)
	}
	for k, want := range map[string]any{"host": "evil\x1b[2J.test", "port": 443.0, "via": "proxy", "count": 2.0, "note": "not in the allow list",
		"t": t0.Add(21 * time.Second).Format(time.RFC3339Nano), "last": t0.Add(21*time.Second + 100*time.Millisecond).Format(time.RFC3339Nano), "source": "serve"} {
		if blocked[k] != want {
			t.Errorf("--json %s: %#v, want %#v", k, blocked[k], want)
		}
	}
	// --since after the blocked attempts: the write only.
	if out, _ := run(t, f, logcmd.Options{Since: t0.Add(25 * time.Second).Format(time.RFC3339)}); strings.Contains(out, "serve   network:") || !strings.Contains(out, "write_file") {
		t.Errorf("--since:\n%q", out)
	}
	// --commands has no network lines (they are not commands).
	if out, _ := run(t, f, logcmd.Options{Commands: true}); strings.Contains(out, "evil") && !strings.Contains(out, "curl https://evil.test") {
		t.Errorf("--commands:\n%s", out)
	}
}
