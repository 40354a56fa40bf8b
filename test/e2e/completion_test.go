//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// Shell completion offers the instances `limactl list` knows.
func TestCompletionOffersInstances(t *testing.T) {
	dir := project(t, map[string]string{"x": "x\n"})
	for _, cmd := range []string{"serve", "status", "review", "sync", "discard"} {
		out, stderr, code := plugin(t, dir, "__complete", cmd, "")
		if code != 0 || !strings.Contains(out, instanceName+"\n") {
			t.Errorf("completing %s: exit %d\n%s\n%s", cmd, code, out, stderr)
		}
	}
	out, _, _ := plugin(t, dir, "__complete", "configure", "")
	for _, agent := range []string{"claude", "gemini", "codex", "cursor"} {
		if !strings.Contains(out, agent) {
			t.Errorf("completing configure: no %s in\n%s", agent, out)
		}
	}
	out, _, code := plugin(t, dir, "completion", "bash")
	if code != 0 || !strings.Contains(out, "__start_limactl-mcp") {
		t.Errorf("completion bash: exit %d", code)
	}
}
