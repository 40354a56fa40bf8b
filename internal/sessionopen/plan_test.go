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

// Lookup finds a directory's own session only; PlanSession plans it under --network, without a
// guest; Release has nothing to do unless a policy ends, and then needs the stored session.
func TestLookupAndPlan(t *testing.T) {
	store := staging.Store{Dir: t.TempDir()}
	work := filepath.Join(t.TempDir(), "proj")
	target := &sessionopen.Target{Instance: &instance.Instance{Name: "vm"}, Store: store, ConnErr: errors.New("stopped")}

	st, err := target.Lookup(work, "")
	if st != nil || err != nil {
		t.Fatalf("Lookup of nothing = %v, %v", st, err)
	}
	p, err := target.PlanSession(work, "", nil, "none")
	if err != nil || p.Changes() || p.Net.Network != "none" || p.Net.Agent == nil || p.Net.Release != "" || p.Conn() != nil {
		t.Fatalf("plan of a new session under none: %+v, %v", p, err)
	}

	stored := &staging.State{ID: staging.SessionID(work), Instance: "vm", Workdir: work, Network: "none"}
	if err := store.Save(stored, &staging.Manifest{}); err != nil {
		t.Fatal(err)
	}
	if st, err = target.Lookup(work, ""); err != nil || st == nil || st.Workdir != work {
		t.Fatalf("Lookup = %+v, %v", st, err)
	}
	if st, err := target.Lookup(filepath.Join(work, "sub"), ""); st != nil || err != nil {
		t.Errorf("Lookup of a subdirectory = %+v, %v; want none (Find looks above)", st, err)
	}
	if st, err := target.Lookup(work, "b"); st != nil || err != nil {
		t.Errorf("Lookup of another session = %+v, %v", st, err)
	}
	p, err = target.PlanSession(work, "", st, "open")
	if err != nil || !p.Changes() || p.Net.Previous != "none" || p.Net.Release == "" || p.Net.Agent != nil {
		t.Fatalf("plan back to open: %+v, %v", p, err)
	}
	// Released through the Lima user's connection: none here, after the state is read again.
	if err := store.Remove(stored.ID); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(context.Background()); !errors.Is(err, staging.ErrNoSession) || p.Net.Release == "" {
		t.Errorf("Release without the stored session: %v (release still pending: %q)", err, p.Net.Release)
	}
	p, err = target.PlanSession(work, "", nil, "")
	if err != nil || p.Release(context.Background()) != nil || p.Changes() {
		t.Errorf("nothing to release: %+v, %v", p, err)
	}
}
