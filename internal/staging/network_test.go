package staging

import (
	"strings"
	"testing"
)

// A preset stays in the session's policy as the person wrote it (status shows it); the guest is
// given its hosts, so that the runner enforces host names only.
func TestPlanNetworkPresets(t *testing.T) {
	p, err := PlanNetwork("/work/proj", "", nil, "allow:@GO,Example.com")
	if err != nil {
		t.Fatal(err)
	}
	if p.Network != "allow:@go,example.com" {
		t.Errorf("Network = %q, want allow:@go,example.com", p.Network)
	}
	if p.Agent == nil || p.Agent.Policy != "allow:proxy.golang.org,sum.golang.org,storage.googleapis.com,example.com" {
		t.Errorf("the guest is given %+v, want the preset's hosts", p.Agent)
	}
	st := &State{ID: SessionIDOf("/work/proj", ""), Network: p.Network, GuestPath: "/home/lmcp/x"}
	if a := AgentOf(st); a == nil || strings.Contains(a.Policy, "@") {
		t.Errorf("AgentOf a stored session with a preset gives the guest %+v", a)
	}
	if _, err := PlanNetwork("/work/proj", "", nil, "allow:@gopher"); err == nil || !strings.Contains(err.Error(), "--network:") || !strings.Contains(err.Error(), "@npm") {
		t.Errorf("an unknown preset: %v, want a --network error listing the presets", err)
	}
}

// A new baseline (an apply from review, a sync) keeps the policy the store holds: a live change
// made since the session was loaded is not written back over.
func TestSaveBaselineKeepsTheStoredNetwork(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	st := &State{ID: "abc", Workdir: "/w", Network: "allow:a.org"}
	if err := store.Save(st, &Manifest{}); err != nil {
		t.Fatal(err)
	}
	loaded, base, err := store.LoadID("abc")
	if err != nil {
		t.Fatal(err)
	}
	s := Attach(nil, store, loaded, base)
	if _, err := store.ChangeNetwork("abc", func(*State) (string, error) { return "allow:a.org,b.org", nil }, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveBaseline(&Manifest{}); err != nil {
		t.Fatal(err)
	}
	after, _, _ := store.LoadID("abc")
	if after.Network != "allow:a.org,b.org" {
		t.Errorf("after a new baseline the policy is %q", after.Network)
	}
	if got := store.LivePolicy("abc")(); got != "allow:a.org,b.org" {
		t.Errorf("LivePolicy %q", got)
	}
}
