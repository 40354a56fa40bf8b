package statuscmd_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/statuscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

func run(t *testing.T, open sessionopen.Opener, asJSON bool) string {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	if err := statuscmd.Run(context.Background(), &statuscmd.Options{IO: ios, Instance: sessiontest.Instance, JSON: asJSON, Open: open}); err != nil {
		t.Fatal(err)
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr: %q", errOut.String())
	}
	return out.String()
}

// stopped opens the instance of store as a stopped one: no connection.
func stopped(store staging.Store) sessionopen.Opener {
	return func(context.Context, string) (*sessionopen.Target, error) {
		return &sessionopen.Target{Instance: &instance.Instance{Name: sessiontest.Instance}, Store: store, ConnErr: errors.New("instance is stopped")}, nil
	}
}

// A session the agent did not change says that, and no more: the host's edits are not counted.
func TestStatusNothingPending(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	f.WriteHost("a.txt", "host edit\n")
	out := run(t, f.Opener(), false)
	if want := "\n  pending:    nothing (the agent changed nothing; host edits are not counted)\n"; !strings.Contains(out, want) {
		t.Errorf("status:\n%s\nwant %q", out, want)
	}
}

func TestStatus(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	f.Guest("echo a2 > a.txt && echo new > new.txt")

	out := run(t, f.Opener(), false)
	want := regexp.QuoteMeta(f.Workdir+"\n  guest path: "+f.GuestPath+"\n  staged:     ") +
		`\d{4}-\d\d-\d\d \d\d:\d\d \((just now|\d+ seconds ago)\), 2 files, 0\.0 MB\n` +
		regexp.QuoteMeta("  pending:    2 changes: 1 added, 1 modified — run `limactl mcp review sshd-test` in "+f.Workdir+"\n")
	if !regexp.MustCompile("^" + want + "$").MatchString(out) {
		t.Errorf("status:\n%s\nwant (regexp):\n%s", out, want)
	}

	var st struct {
		Instance string                  `json:"instance"`
		Sessions []statuscmd.SessionJSON `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(run(t, f.Opener(), true)), &st); err != nil {
		t.Fatal(err)
	}
	if st.Instance != sessiontest.Instance || len(st.Sessions) != 1 || st.Sessions[0].PendingTotal != 2 || st.Sessions[0].Workdir != f.Workdir {
		t.Errorf("--json: %+v", st)
	}

	// A stopped instance: the sessions are listed, their pending changes unknown.
	out = run(t, stopped(f.Store), false)
	if !regexp.MustCompile(`(?m)^  pending:    unknown \(instance is stopped\)$`).MatchString(out) {
		t.Errorf("status of a stopped instance:\n%s", out)
	}
}

func TestStatusNoSessions(t *testing.T) {
	out := run(t, stopped(staging.Store{Dir: t.TempDir()}), false)
	if out != "No staged sessions in instance \"sshd-test\". An agent running `limactl mcp serve sshd-test` in a project directory creates one.\n" {
		t.Errorf("status: %q", out)
	}
}

// On a terminal, status says what it waits for while it connects and scans; piped, it says
// nothing on stderr.
func TestStatusShowsProgressOnATerminal(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(false, true)
	if err := statuscmd.Run(context.Background(), &statuscmd.Options{IO: ios, Instance: sessiontest.Instance, Open: f.Opener()}); err != nil {
		t.Fatal(err)
	}
	if want := "Connecting to " + sessiontest.Instance + "… reading its staged sessions…\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	if !strings.Contains(out.String(), f.Workdir) {
		t.Errorf("stdout %q", out)
	}
}

// status --json has the documented schema: this pins it (times aside), and every key it can
// have is in docs/status-json.md.
func TestStatusJSONSchema(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	f.Guest("echo a2 > a.txt && echo new > new.txt")
	normal := func(out string) string {
		t.Helper()
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, s := range v["sessions"].([]any) {
			s := s.(map[string]any)
			for _, k := range []string{"staged_at", "updated_at"} {
				if _, err := time.Parse(time.RFC3339Nano, s[k].(string)); err != nil {
					t.Errorf("%s: %v", k, err)
				}
				s[k] = "TIME"
			}
		}
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return strings.NewReplacer(f.Workdir, "WORKDIR", f.GuestPath, "GUESTPATH").Replace(string(data))
	}
	got := normal(run(t, f.Opener(), true))
	want := `{
  "instance": "sshd-test",
  "schema_version": 1,
  "sessions": [
    {
      "bytes": 4,
      "checkpoint_bytes": 0,
      "checkpoints": [],
      "files": 2,
      "guest_path": "GUESTPATH",
      "network": {
        "policy": "open"
      },
      "pending": {
        "added": 1,
        "modified": 1
      },
      "pending_total": 2,
      "staged_at": "TIME",
      "updated_at": "TIME",
      "workdir": "WORKDIR"
    }
  ]
}`
	if got != want {
		t.Errorf("--json:\n%s\nwant:\n%s", got, want)
	}
	// A stopped instance: pending is {} (not null), the total -1, and the error says why.
	stoppedOut := run(t, stopped(f.Store), true)
	if !strings.Contains(stoppedOut, `"pending": {},`) || !strings.Contains(stoppedOut, `"pending_total": -1,`) || !strings.Contains(stoppedOut, `"error": "instance is stopped"`) {
		t.Errorf("--json of a stopped instance:\n%s", stoppedOut)
	}
	// No sessions: a list, not null.
	if out := run(t, stopped(staging.Store{Dir: t.TempDir()}), true); !strings.Contains(out, `"sessions": []`) {
		t.Errorf("--json of no sessions:\n%s", out)
	}

	// A named session beside the unnamed one: it has the key "session", which the unnamed
	// one leaves out.
	f.AddSession("alpha")
	namedOut := run(t, f.Opener(), true)
	if strings.Count(namedOut, `"session": "alpha"`) != 1 || strings.Count(namedOut, `"session"`) != 1 {
		t.Errorf("--json with a named session:\n%s", namedOut)
	}

	doc, err := os.ReadFile("../../../docs/status-json.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, out := range []string{got, stoppedOut, namedOut} {
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		for k := range v {
			keys[k] = true
		}
		for _, s := range v["sessions"].([]any) {
			for k := range s.(map[string]any) {
				keys[k] = true
			}
		}
	}
	for k := range keys {
		if !strings.Contains(string(doc), "| `"+k+"` |") {
			t.Errorf("key %q is not in docs/status-json.md", k)
		}
	}
}
