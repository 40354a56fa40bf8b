package statuscmd_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

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
		Sessions []staging.SessionStatus `json:"sessions"`
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
