package statuscmd_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// status shows each session's timeline counts: calls, shell commands, failures, time spent;
// --json the same as "timeline"; a session without a timeline shows none.
func TestStatusShowsTimelineCounts(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	if out := run(t, f.Opener(), false); strings.Contains(out, "timeline:") {
		t.Errorf("a session without a timeline shows one:\n%s", out)
	}
	tl := timeline.Open(f.Store.SessionDir(staging.SessionID(f.Workdir)), "serve", nil)
	one := 1
	tl.Record(timeline.Event{Kind: timeline.Call, Tool: "read_file", DurationMS: 500})
	tl.Record(timeline.Event{Kind: timeline.Call, Tool: "run_shell_command", Command: "false", Exit: &one, DurationMS: 1500})
	tl.Record(timeline.Event{Kind: timeline.Command, Source: "shell", Command: "make", DurationMS: 40_000})
	out := run(t, f.Opener(), false)
	if want := "  timeline:   2 tool calls (2 shell commands), 1 failed, 42 s in calls — `limactl mcp log " + sessiontest.Instance + "` in " + f.Workdir; !strings.Contains(out, want) {
		t.Errorf("status lacks %q:\n%s", want, out)
	}
	var doc struct {
		Sessions []struct {
			Timeline *timeline.Counts `json:"timeline"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(run(t, f.Opener(), true)), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Sessions) != 1 || doc.Sessions[0].Timeline == nil || doc.Sessions[0].Timeline.Calls != 2 || doc.Sessions[0].Timeline.Failures != 1 || doc.Sessions[0].Timeline.BusyMS != 42_000 {
		t.Errorf("status --json timeline: %+v", doc.Sessions)
	}
}

// The timeline line says the network attempts the timeline recorded: none for an open
// session that recorded none; "0 attempts allowed, 0 blocked" under a policy; the counts
// whenever there are some (a session whose policy was changed to open keeps its events).
func TestStatusShowsTimelineNetworkCounts(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	id := staging.SessionID(f.Workdir)
	tl := timeline.Open(f.Store.SessionDir(id), "serve", nil)
	tl.Record(timeline.Event{Kind: timeline.Call, Tool: "read_file", DurationMS: 500})
	setPolicy := func(policy string) {
		t.Helper()
		st, m, err := f.Store.LoadID(id)
		if err != nil {
			t.Fatal(err)
		}
		st.Network = policy
		if err := f.Store.Save(st, m); err != nil {
			t.Fatal(err)
		}
	}
	line := func(out string) string {
		t.Helper()
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "  timeline:   ") {
				return l
			}
		}
		t.Fatalf("no timeline line:\n%s", out)
		return ""
	}
	log := " — `limactl mcp log " + sessiontest.Instance + "` in " + f.Workdir
	if got, want := line(run(t, f.Opener(), false)), "  timeline:   1 tool call (0 shell commands), 0 failed, 500 ms in calls"+log; got != want {
		t.Errorf("open, nothing recorded:\n got %q\nwant %q", got, want)
	}
	// Under a policy (the instance stopped: what the host knows is enough).
	setPolicy("none")
	if got, want := line(run(t, stopped(f.Store), false)), "  timeline:   1 tool call (0 shell commands), 0 failed, 500 ms in calls; network: 0 attempts allowed, 0 blocked"+log; got != want {
		t.Errorf("under a policy, nothing recorded:\n got %q\nwant %q", got, want)
	}
	tl.Record(timeline.Event{Kind: timeline.Network, Host: "pypi.test", Port: 443, Verdict: "allowed", Via: "proxy", Count: 12})
	tl.Record(timeline.Event{Kind: timeline.Network, Host: "evil.test", Port: 443, Verdict: "blocked", Via: "proxy", Count: 2})
	tl.Record(timeline.Event{Kind: timeline.Network, Host: "10.0.0.1", Port: 22, Verdict: "blocked", Via: "direct", Count: 1})
	if got, want := line(run(t, stopped(f.Store), false)), "; network: 12 attempts allowed, 3 blocked"+log; !strings.HasSuffix(got, want) {
		t.Errorf("under a policy:\n got %q\nwant …%q", got, want)
	}
	// Open again: the attempts recorded are still said.
	setPolicy("")
	if got, want := line(run(t, f.Opener(), false)), "; network: 12 attempts allowed, 3 blocked"+log; !strings.HasSuffix(got, want) {
		t.Errorf("open, with attempts recorded:\n got %q\nwant …%q", got, want)
	}
}
