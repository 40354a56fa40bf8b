package sessionopen_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/projectpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Without --network, serve and shell plan a session under the project's policy file on the
// host (over the session's stored policy, as a configured --network would); --network wins.
func TestPlanReadsTheProjectPolicy(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	store := staging.Store{Dir: t.TempDir()}
	work := t.TempDir()
	target := &sessionopen.Target{Instance: &instance.Instance{Name: "vm"}, Store: store, ConnErr: errors.New("stopped")}

	p, err := target.PlanSession(work, "", nil, "")
	if err != nil || p.Net.Network != staging.OpenNetwork || p.PolicyFile != "" {
		t.Fatalf("no file: %+v, %v", p, err)
	}
	path, err := projectpolicy.Save(work, "allow:@go,example.com:ro")
	if err != nil {
		t.Fatal(err)
	}
	p, err = target.PlanSession(work, "", nil, "")
	if err != nil || p.Net.Network != "allow:@go,example.com:ro" || p.PolicyFile != path || p.Net.Agent == nil {
		t.Fatalf("the file's policy: %+v, %v", p, err)
	}
	stored := &staging.State{ID: staging.SessionID(work), Instance: "vm", Workdir: work, Network: "none"}
	p, err = target.PlanSession(work, "", stored, "")
	if err != nil || p.Net.Network != "allow:@go,example.com:ro" || !p.Changes() {
		t.Fatalf("a stored session, the file's policy: %+v, %v", p, err)
	}
	p, err = target.PlanSession(work, "", stored, "none")
	if err != nil || p.Net.Network != "none" || p.PolicyFile != "" {
		t.Fatalf("--network wins: %+v, %v", p, err)
	}
	// A damaged file is an error that names it, not the open default.
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := target.PlanSession(work, "", nil, ""); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "--network") {
		t.Fatalf("a damaged file: %v", err)
	}
	if _, err := target.PlanSession(work, "", nil, "none"); err != nil {
		t.Fatalf("a damaged file, --network given: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, ".limactl-mcp")); err == nil {
		t.Error("something was written in the project")
	}
}
