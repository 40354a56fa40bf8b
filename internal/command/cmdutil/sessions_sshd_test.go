package cmdutil_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// OpenCompared opens the Ref's session and the others of its working directory, in the order
// named, on a real sshd; from a directory inside the staged project it says whose sessions
// are compared; a session the directory does not have is an error.
func TestOpenCompared(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	f.AddSession("try1")
	sub := filepath.Join(f.Workdir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	open := func(workdir string, names ...string) (string, []*staging.Session, error) {
		ios, _, _, errOut := iostreams.Test()
		ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "compare", Instance: sessiontest.Instance, Workdir: workdir, Session: names[0], Open: f.Opener()})
		if err != nil {
			t.Fatal(err)
		}
		target, sessions, err := ref.OpenCompared(context.Background(), names[1:])
		if err == nil {
			target.Close()
		}
		return errOut.String(), sessions, err
	}

	note, sessions, err := open(f.Workdir, "try1", "")
	if err != nil || len(sessions) != 2 || sessions[0].State.Session != "try1" || sessions[1].State.Session != "" || note != "" {
		t.Fatalf("try1,default from the working directory: %v, %d sessions, note %q", err, len(sessions), note)
	}
	for _, s := range sessions {
		if s.State.Workdir != f.Workdir {
			t.Errorf("session %q is of %s, want %s", s.State.Session, s.State.Workdir, f.Workdir)
		}
	}

	note, sessions, err = open(sub, "", "try1")
	if want := "Comparing sessions of " + f.Workdir + " (the staged project that holds " + sub + ").\n"; err != nil || len(sessions) != 2 || sessions[1].State.Session != "try1" || note != want {
		t.Errorf("default,try1 from inside the project: %v, %d sessions, note %q; want %q", err, len(sessions), note, want)
	}

	if _, sessions, err := open(f.Workdir, "", "try1", "nosuch"); !errors.Is(err, staging.ErrNoSession) || sessions != nil {
		t.Errorf("a session the directory does not have: %v, %d sessions", err, len(sessions))
	}
}
