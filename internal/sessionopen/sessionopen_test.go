package sessionopen_test

import (
	"context"
	"errors"
	"path/filepath"
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
