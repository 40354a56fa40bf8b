package shellcmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/shellcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// A shell command is in the session's timeline with its exit status; a value passed with
// --env is not, even where the command line spells it.
func TestShellRecordsTimeline(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	const secret = "shell-known-secret-93f1c2"
	env := map[string]string{"DEPLOY_TOKEN": secret}
	_, stderr, code := run(t, f, env, shellcmd.Options{Env: []string{"DEPLOY_TOKEN"}, Command: []string{"sh", "-c", "echo " + secret + " >/dev/null; exit 4"}})
	if code != 4 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	dir := f.Store.SessionDir(staging.SessionID(f.Workdir))
	raw, err := os.ReadFile(filepath.Join(dir, timeline.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secret) {
		t.Errorf("the timeline holds the --env value:\n%s", raw)
	}
	tl, err := timeline.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []timeline.Event
	for _, e := range tl.Events {
		if e.Kind == timeline.Command {
			cmds = append(cmds, e)
		}
	}
	if len(cmds) != 1 || cmds[0].Exit == nil || *cmds[0].Exit != 4 || cmds[0].Source != "shell" || !strings.Contains(cmds[0].Command, "exit 4") || !strings.Contains(cmds[0].Command, timeline.Redacted) {
		t.Errorf("shell's command in the timeline: %+v\n%s", cmds, raw)
	}
}
