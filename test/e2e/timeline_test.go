//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// A scripted agent session in the VM: the timeline has every call and command, `log` shows
// them, `--commands` prints them as a script, and `review --json` says which call produced
// each change (with the guest's clock against the host's).
func TestTimelineSession(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n", "gone.txt": "g\n"})
	chownToUser(t, dir)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	toolsuite.MustOK(t, s.Session, "write_file", map[string]any{"path": dir + "/new.txt", "content": "new\n"})
	// Apart by more than attribution's slack, so that each change has one window.
	time.Sleep(4 * time.Second)
	shellOK(t, s.Session, dir, "echo built > built.txt && rm gone.txt")
	time.Sleep(4 * time.Second)
	toolsuite.MustOK(t, s.Session, "checkpoint", map[string]any{"label": "e2e"})
	toolsuite.MustOK(t, s.Session, "run_shell_command", map[string]any{"command": []string{"sh", "-c", "exit 5"}, "directory": dir})

	out, stderr, code := plugin(t, dir, "review", instanceName, "--json")
	if code != 0 {
		t.Fatalf("review --json: exit %d\n%s\n%s", code, out, stderr)
	}
	var doc struct {
		Items []struct {
			Path    string `json:"path"`
			History string `json:"history"`
		} `json:"items"`
		Timeline *struct {
			Calls, Commands, Failures int
		} `json:"timeline"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]string{
		"new.txt":   "written by write_file at ",
		"built.txt": "modified by `bash -c 'echo built > built.txt && rm gone.txt'`",
		"gone.txt":  "deleted by one of these 2 calls",
	}
	for _, it := range doc.Items {
		if w, ok := want[it.Path]; ok && !strings.Contains(it.History, w) {
			t.Errorf("%s: history %q, want %q", it.Path, it.History, w)
		}
		delete(want, it.Path)
	}
	if len(want) > 0 {
		t.Errorf("not in the review: %v\n%s", want, out)
	}
	if doc.Timeline == nil || doc.Timeline.Calls < 4 || doc.Timeline.Failures != 1 {
		t.Errorf("review's timeline totals: %+v", doc.Timeline)
	}
	out, stderr, code = plugin(t, dir, "log", instanceName)
	if code != 0 || !strings.Contains(out, "write_file new.txt") || !strings.Contains(out, "run_shell_command `sh -c 'exit 5'` (exit 5") {
		t.Errorf("log: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = plugin(t, dir, "log", instanceName, "--commands")
	if i, j := strings.Index(out, "echo built"), strings.Index(out, "exit 5"); code != 0 || i < 0 || j < i {
		t.Errorf("log --commands: exit %d\n%s", code, out)
	}
}
