//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// A preset in a policy (issue 26): --network=allow:@go lets the agent reach proxy.golang.org
// (here a server on the host's loopback under that name, in the guest's /etc/hosts) through the
// proxy and refuses another name; status shows the policy as written, not its hosts.
func TestNetworkPreset(t *testing.T) {
	port := hostServer(t)
	// A line of this test's own (TestNetworkPolicy's marker may already be there with its names).
	const marker = "# limactl-mcp-e2e-presets"
	line := "$(getent hosts host.lima.internal | awk '{print $1; exit}') proxy.golang.org other-preset.test " + marker
	guestShell(t, `grep -q '`+marker+`' /etc/hosts || echo "`+line+`" | sudo tee -a /etc/hosts >/dev/null`)
	t.Cleanup(func() { guestShell(t, `sudo sed -i '/`+marker+`$/d' /etc/hosts`) })
	dir := homeWorkdir(t)

	t.Run("an unknown preset is refused with the list", func(t *testing.T) {
		_, stderr, code := mcpShell(t, dir, nil, "--network=allow:@golang", "--no-review", instanceName, "--", "true")
		if code == 0 || !strings.Contains(stderr, `"@golang" is not a preset (did you mean @go?)`) || !strings.Contains(stderr, "@npm") {
			t.Fatalf("want a refusal naming the presets; exit %d: %s", code, stderr)
		}
	})

	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--network=allow:@go")
	discardOnCleanup(t, dir)
	t.Run("the preset's host passes, another is refused", func(t *testing.T) {
		script := fmt.Sprintf("curl -sS --max-time 20 http://proxy.golang.org:%d/ok; echo; curl -sS --max-time 20 -o /dev/null -w '%%{http_code}' http://other-preset.test:%d/no", port, port)
		out, _, text := runShell(t, s, script)
		if out.Stdout != "hello ok\n403" {
			t.Fatalf("under allow:@go: %s", text)
		}
	})
	t.Run("status shows the preset", func(t *testing.T) {
		nw, _ := statusOf(t, dir)["network"].(map[string]any)
		if nw == nil || nw["policy"] != "allow:@go" {
			t.Fatalf("status --json network: %v", nw)
		}
		text, _, _ := plugin(t, dir, "status", instanceName)
		if !strings.Contains(text, "network:    allow:@go:") {
			t.Errorf("status: %s", text)
		}
	})
	s.Session.Close()
}
