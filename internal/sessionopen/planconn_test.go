package sessionopen

import (
	"path/filepath"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// TestPlanConnWinsOverTheStoredSessions: `shell --network=NEW` loads the session (a
// connection for its agent user, made from the policy it holds) before it plans; the plan's
// connection must be one that sets the agent up under NEW. It was the stored one, so the first
// command after a narrower --network ran under the wider policy the session had.
func TestPlanConnWinsOverTheStoredSessions(t *testing.T) {
	store := staging.Store{Dir: t.TempDir()}
	work := filepath.Join(t.TempDir(), "proj")
	tg := &Target{Instance: &instance.Instance{Name: "vm"}, Store: store}
	tg.newConn = func(a *guest.Agent) *guest.Conn { return guest.New(nil, guest.Options{Agent: a}) }
	tg.Conn = tg.newConn(nil)
	defer tg.Close()
	stored := &staging.State{ID: staging.SessionID(work), Instance: "vm", Workdir: work, Network: "allow:wide.example,narrow.example"}
	if err := store.Save(stored, &staging.Manifest{}); err != nil {
		t.Fatal(err)
	}
	sess, err := tg.Session(work, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.ConnFor(sess.State).Agent().CurrentPolicy(); got != "allow:wide.example,narrow.example" {
		t.Fatalf("the stored session's connection is under %q", got)
	}
	p, err := tg.PlanSession(work, "", sess.State, "allow:narrow.example")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Conn()
	if c.Agent() != p.Net.Agent {
		t.Fatalf("the plan's connection is the stored session's (agent %+v)", c.Agent())
	}
	if got := c.Agent().CurrentPolicy(); got != "allow:narrow.example" {
		t.Errorf("the plan's connection sets the agent up under %q, want allow:narrow.example", got)
	}
	if p.Conn() != c {
		t.Errorf("the plan's connection is made again at each call")
	}
	if again := tg.ConnFor(sess.State); again != c {
		t.Errorf("ConnFor after the plan is another connection than the plan's")
	}
}
