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

// The agent's set-ups take the session's recorded policy once this process has recorded its
// own (RecordNetwork), a live change made after it included, even when no set-up read the
// record while it held the process's own policy: a new session's first connect comes before
// its first staging, and a person may allow a host before the next set-up (a reconnect, the
// hand-over to serve's own connection), which then undid the change. Before the record, a
// previous server's policy is not taken: --network wins.
func TestPlanSetUpsTakeALiveChangeMadeBeforeAnyReadTheRecord(t *testing.T) {
	store := staging.Store{Dir: t.TempDir()}
	work := filepath.Join(t.TempDir(), "proj")
	target := &sessionopen.Target{Instance: &instance.Instance{Name: "vm"}, Store: store, ConnErr: errors.New("stopped")}
	p, err := target.PlanSession(work, "", nil, "allow:a.test")
	if err != nil {
		t.Fatal(err)
	}
	a := p.Net.Agent
	if got := a.CurrentPolicy(); got != "allow:a.test" {
		t.Fatalf("the first connect, nothing recorded: %q", got)
	}

	// A previous server's record, before this one records its own: not taken.
	id := staging.SessionID(work)
	st := &staging.State{ID: id, Instance: "vm", Workdir: work, Network: "allow:old.test"}
	if err := store.Save(st, &staging.Manifest{}); err != nil {
		t.Fatal(err)
	}
	if got := a.CurrentPolicy(); got != "allow:a.test" {
		t.Errorf("a previous server's record was taken over --network: %q", got)
	}

	// This server stages and records its policy; a person allows a host live before any set-up
	// reads the record: the next set-up takes it.
	if err := p.RecordNetwork(staging.Attach(nil, store, st, &staging.Manifest{})); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ChangeNetwork(id, func(*staging.State) (string, error) { return "allow:a.test,b.test", nil }, nil); err != nil {
		t.Fatal(err)
	}
	if got := a.CurrentPolicy(); got != "allow:a.test,b.test" {
		t.Errorf("after the live change, a set-up puts %q in place, want the change", got)
	}
}
