package reviewcmd_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// review --json says, for every path of the changeset, which recorded calls produced it: the
// file-tool call that named it, the command whose window holds its change, "one of these"
// for two concurrent commands, the candidates of a deletion, nothing for a change outside
// every call. The changes are real (made in the guest copy between the events' times).
func TestReviewJSONAttribution(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "gone.txt": "g\n", "keep.txt": "k\n"})
	tl := timeline.Open(f.Store.SessionDir(staging.SessionID(f.Workdir)), "serve", nil)
	// around runs script in the guest copy inside the window of the events made by mk.
	around := func(script string, mk func(start time.Time, ms float64) []timeline.Event) {
		start := time.Now()
		f.Guest(script)
		time.Sleep(20 * time.Millisecond)
		for _, e := range mk(start, float64(time.Since(start).Milliseconds())) {
			tl.Record(e)
		}
	}
	zero := 0
	around("echo a2 > a.txt", func(s time.Time, ms float64) []timeline.Event {
		return []timeline.Event{{Time: s, Kind: timeline.Call, Tool: "write_file", Paths: []string{"a.txt"}, DurationMS: ms}}
	})
	// More than Slack later, so that the windows do not overlap.
	time.Sleep(timeline.Slack + time.Second)
	around("echo b > built.txt && rm gone.txt", func(s time.Time, ms float64) []timeline.Event {
		return []timeline.Event{{Time: s, Kind: timeline.Call, Tool: "run_shell_command", Command: "make build", DurationMS: ms, Exit: &zero}}
	})
	time.Sleep(timeline.Slack + time.Second)
	around("echo both > both.txt", func(s time.Time, ms float64) []timeline.Event {
		return []timeline.Event{
			{Time: s, Kind: timeline.Call, Tool: "run_shell_command", Command: "npm test", DurationMS: ms, Exit: &zero},
			{Time: s, Kind: timeline.Command, Source: "shell", Command: "npm run lint", DurationMS: ms, Exit: &zero},
		}
	})
	time.Sleep(timeline.Slack + time.Second)
	f.Guest("echo quiet > quiet.txt") // outside every call

	res := run(t, f, reviewcmd.Options{JSON: true}, false)
	if res.err != nil {
		t.Fatalf("%v\n%s", res.err, res.errOut)
	}
	var doc struct {
		Items []struct {
			Path       string               `json:"path"`
			Provenance *timeline.Provenance `json:"provenance"`
			History    string               `json:"history"`
		} `json:"items"`
		Timeline *timeline.Counts `json:"timeline"`
	}
	if err := json.Unmarshal([]byte(res.out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, res.out)
	}
	want := map[string]string{
		"a.txt":     "written by write_file at ",
		"built.txt": "modified by `make build` (exit 0",
		"gone.txt":  "deleted by one of these 3 calls: `make build`",
		"both.txt":  "modified by one of these 2 calls: `npm test`",
		"quiet.txt": "outside every recorded call",
	}
	for _, it := range doc.Items {
		w, ok := want[it.Path]
		if !ok {
			t.Errorf("unexpected item %s", it.Path)
			continue
		}
		delete(want, it.Path)
		if it.Provenance == nil || !strings.Contains(it.History, w) {
			t.Errorf("%s: history %q, want %q (%+v)", it.Path, it.History, w, it.Provenance)
		}
	}
	if len(want) > 0 {
		t.Errorf("items missing: %v\n%s", want, res.out)
	}
	if doc.Timeline == nil || doc.Timeline.Calls != 3 || doc.Timeline.Commands != 3 {
		t.Errorf("timeline totals: %+v", doc.Timeline)
	}
}
