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
