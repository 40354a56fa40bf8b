package sessionopen_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Target.Session says which of "no session" and "not running" stands in the way, in that
// order, without a guest.
func TestSessionWithoutGuest(t *testing.T) {
	store := staging.Store{Dir: t.TempDir()}
	work := filepath.Join(t.TempDir(), "proj")
	notRunning := errors.New("instance \"vm\" is stopped")
	target := &sessionopen.Target{Instance: &instance.Instance{Name: "vm"}, Store: store, ConnErr: notRunning}

	_, err := target.Session(work, "")
	if err == nil || err.Error() != work+" has no staged session in instance \"vm\": an agent's `limactl mcp serve vm` run in that directory creates one" {
		t.Errorf("no session: %v", err)
	}

	if err := store.Save(&staging.State{ID: staging.SessionID(work), Instance: "vm", Workdir: work}, &staging.Manifest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := target.Session(work, ""); err != notRunning {
		t.Errorf("stopped instance: %v, want %v", err, notRunning)
	}

	// OpenSession passes on the error of the opener, then that of the session.
	closed := errors.New("cannot open")
	open := func(_ context.Context, name string) (*sessionopen.Target, error) {
		if name != "vm" {
			return nil, closed
		}
		return target, nil
	}
	if _, _, err := sessionopen.OpenSession(context.Background(), open, "review", "other", work, ""); err != closed {
		t.Errorf("OpenSession of another instance: %v", err)
	}
	if _, _, err := sessionopen.OpenSession(context.Background(), open, "review", "vm", work, ""); err != notRunning {
		t.Errorf("OpenSession of a stopped instance: %v", err)
	}
}

// Find and Session look for the session of the name asked for: from a subdirectory, the
// project's; from a parent, the projects below that have one, with --session in the command;
// a missing one is named with those the directory has.
func TestNamedSessionFind(t *testing.T) {
	store := staging.Store{Dir: t.TempDir()}
	work := filepath.Join(t.TempDir(), "proj")
	target := &sessionopen.Target{Instance: &instance.Instance{Name: "vm"}, Store: store, ConnErr: errors.New("stopped")}
	for _, name := range []string{"", "a"} {
		if err := store.Save(&staging.State{ID: staging.SessionIDOf(work, name), Session: name, Instance: "vm", Workdir: work}, &staging.Manifest{}); err != nil {
			t.Fatal(err)
		}
	}
	if found, err := target.Find("review", filepath.Join(work, "sub"), "a"); err != nil || found != work {
		t.Errorf("from a subdirectory: %q %v", found, err)
	}
	_, err := target.Find("review", filepath.Dir(work), "a")
	if err == nil || !strings.HasSuffix(err.Error(), "review it with `limactl mcp review vm --session a --workdir "+work+"`") {
		t.Errorf("from the parent: %v", err)
	}
	// A name nobody has: Find says workdir, Session says what there is.
	if found, err := target.Find("review", work, "b"); err != nil || found != work {
		t.Errorf("a missing session: %q %v", found, err)
	}
	_, err = target.Session(work, "b")
	if err == nil || !errors.Is(err, staging.ErrNoSession) || !strings.HasSuffix(err.Error(), "its sessions there: default, a (`limactl mcp status vm` lists them, --session NAME picks one)") {
		t.Errorf("Session of a missing name: %v", err)
	}
}
