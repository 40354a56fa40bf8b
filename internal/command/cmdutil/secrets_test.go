package cmdutil

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

func TestWireSecrets(t *testing.T) {
	lookup := func(name string) (string, bool) {
		if name == "ANTHROPIC_API_KEY" {
			return "sk-ant-api03-the-value-0123456789", true
		}
		return "", false
	}
	set, err := ResolveSecrets(context.Background(), SecretFlags{Agent: true}, lookup)
	if err != nil || set == nil || strings.Join(set.Names(), ",") != "ANTHROPIC_API_KEY" {
		t.Fatalf("--agent-secrets: %v %v", set, err)
	}
	if _, err := ResolveSecrets(context.Background(), SecretFlags{Agent: true}, func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "none of") {
		t.Errorf("--agent-secrets with nothing set: %v", err)
	}
	if _, err := ResolveSecrets(context.Background(), SecretFlags{Specs: []string{"MY_TOKEN"}}, lookup); err == nil || !strings.Contains(err.Error(), "MY_TOKEN@HOST") {
		t.Errorf("an unbound unknown name: %v", err)
	}
	if _, err := ResolveSecrets(context.Background(), SecretFlags{Specs: []string{"OPENAI_API_KEY"}}, lookup); err == nil || !strings.Contains(err.Error(), "not set on the host") {
		t.Errorf("a value missing: %v", err)
	}

	tg := &sessionopen.Target{Store: staging.Store{Dir: t.TempDir()}}
	for network, want := range map[string]string{"none": "under --network none", "open": "the instance is not running"} {
		plan, err := tg.PlanSession("/w", "", nil, network)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := WireSecrets(tg, plan, set, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", network, err)
		}
	}
	plan, err := tg.PlanSession("/w", "", nil, "allow:@npm")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s, err := WireSecrets(tg, plan, set, &out)
	if err != nil {
		t.Fatal(err)
	}
	a := plan.Net.Agent
	if a.Secrets == nil || !strings.HasSuffix(a.CurrentPolicy(), ",api.anthropic.com") || plan.Net.Network != "allow:@npm" {
		t.Errorf("agent policy %q, session's %q, secrets %v", a.CurrentPolicy(), plan.Net.Network, a.Secrets)
	}
	if err := a.Secrets.Setup.Check(); err != nil {
		t.Error(err)
	}
	if strings.Contains(a.CurrentPolicy()+a.Secrets.Setup.CAPEM+strings.Join(a.Secrets.Setup.Env, "")+out.String(), "the-value") {
		t.Error("a value reached what the guest gets, or the output")
	}
	if !strings.Contains(out.String(), "join the allowlist for this run: api.anthropic.com") {
		t.Errorf("output: %s", out.String())
	}
	if s.CA == nil {
		t.Error("no CA")
	}

	// A second process of the session (serve, then shell) resolves its own values and gets the
	// session's placeholders and CA: the guest's environment means the same to both relays.
	set2, err := ResolveSecrets(context.Background(), SecretFlags{Specs: []string{"ANTHROPIC_API_KEY"}}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	plan2, err := tg.PlanSession("/w", "", nil, "allow:@npm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WireSecrets(tg, plan2, set2, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := plan2.Net.Agent.Secrets.Setup, a.Secrets.Setup; strings.Join(got.Env, " ") != strings.Join(want.Env, " ") || got.CAPEM != want.CAPEM {
		t.Errorf("the second process gives the guest %v, the first %v (same CA: %v)", got.Env, want.Env, got.CAPEM == want.CAPEM)
	}
}
