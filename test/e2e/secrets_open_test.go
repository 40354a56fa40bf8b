//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
)

// TestSecretsUnderOpen: `limactl mcp shell --secret ANTHROPIC_API_KEY` under the network
// policy open (no agent user, no guest proxy: the command's own connection carries a proxy for
// the bound hosts, guest/openproxy.go). In the guest, curl and python3 reach the fake
// api.anthropic.com with the real value while holding only the placeholder; a CONNECT to
// another host goes through from the guest as it is (the placeholder stays one); plain HTTP
// goes direct; the value is in no guest process's environ or cmdline; status shows the uses;
// the secrets' directory in the guest is gone once the command ends. Then `serve --secret`
// on the same session: its commands do the same.
func TestSecretsUnderOpen(t *testing.T) {
	const value = "sk-ant-api03-e2eOPEN4K2value-0123456789abcdef"
	const valueRE = "e2eOPE[N]4K2value"
	dir, prov, env := secretsProject(t, value)
	echoURL := fmt.Sprintf("http://echo-secrets.test:%d/", startEchoHost(t))

	script := `echo "PLACEHOLDER=$ANTHROPIC_API_KEY"; echo "WHO=$(id -un)"; echo "BUNDLE=$SSL_CERT_FILE"
curl -sS --max-time 60 -H "x-api-key: $ANTHROPIC_API_KEY" https://api.anthropic.com/v1/models; echo
python3 -c '
import os, urllib.request
r = urllib.request.Request("https://api.anthropic.com/v1/models", headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"]})
print("PY", urllib.request.urlopen(r, timeout=60).read().decode())'
echo "TUNNEL $(curl -sS --max-time 20 -p -x "$HTTPS_PROXY" -H "x-api-key: $ANTHROPIC_API_KEY" ` + echoURL + `)"
echo "DIRECT $(curl -sS --max-time 20 -H "x-api-key: $ANTHROPIC_API_KEY" ` + echoURL + `)"
echo "SCAN[$(sudo -n sh -c 'for p in /proc/[0-9]*; do for f in environ cmdline; do grep -l -a -e ` + shq(valueRE) + ` $p/$f 2>/dev/null; done; done; true')]"`

	cmd := mcpShellCmd(t, dir, env, "--network=open", "--secret", "ANTHROPIC_API_KEY", "--no-review", instanceName, "--", "sh", "-c", script)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr.String())
	if err != nil {
		t.Fatalf("the shell failed: %v", err)
	}
	if strings.Contains(out, value) || strings.Contains(stderr.String(), value) {
		t.Errorf("the value reached the command's output")
	}
	if !strings.Contains(out, "PLACEHOLDER=sk-ant-api03-"+secrets.PlaceholderMark) {
		t.Errorf("the agent does not hold the placeholder")
	}
	if strings.Contains(out, "WHO=lmcp-") {
		t.Errorf("under open the command runs as an agent user")
	}
	if !strings.Contains(out, "\nPROVIDER key-ok=true\n") {
		t.Errorf("curl did not reach the provider with the value")
	}
	if !strings.Contains(out, "PY PROVIDER key-ok=true") {
		t.Errorf("python3 did not reach the provider with the value")
	}
	if !strings.Contains(out, "TUNNEL ECHO sk-ant-api03-"+secrets.PlaceholderMark) {
		t.Errorf("a CONNECT to an unbound host did not go through with the placeholder")
	}
	if !strings.Contains(out, "DIRECT ECHO sk-ant-api03-"+secrets.PlaceholderMark) {
		t.Errorf("plain HTTP to an unbound host did not go direct with the placeholder")
	}
	if !strings.Contains(out, "SCAN[]") {
		t.Errorf("the value is in guest processes (or the scan did not run)")
	}
	for _, k := range prov.keys() {
		if k != value {
			t.Errorf("the provider got a request without the value: %q", k)
		}
	}
	if len(prov.keys()) < 2 {
		t.Errorf("the provider got %d requests, want curl's and python's", len(prov.keys()))
	}
	if !strings.Contains(stderr.String(), "under network open, the agent's HTTPS goes through this command's proxy") {
		t.Errorf("the shell did not say how the secrets are carried under open")
	}
	// The secrets' directory of the command's connection is gone with it.
	m := regexp.MustCompile(`BUNDLE=(/\S+)/bundle\.pem`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no bundle path in the command's environment")
	}
	if left := guestShell(t, "ls -d "+shq(m[1])+" 2>/dev/null || true"); strings.TrimSpace(left) != "" {
		t.Errorf("the secrets' directory is left in the guest: %s", left)
	}

	// The agent's MCP server under open: its commands (the runner's, started with the
	// secrets' environment) on the same session, resumed.
	srv := startServerIn(t, dir, nil, "env", append(append([]string{}, env...), "limactl", "mcp", "serve", "--secret", "ANTHROPIC_API_KEY", instanceName)...)
	sout := shellOK(t, srv.Session, dir, `echo "PLACEHOLDER=$ANTHROPIC_API_KEY"; printf "SERVE "; curl -sS --max-time 60 -H "x-api-key: $ANTHROPIC_API_KEY" https://api.anthropic.com/v1/models; echo`)
	if !strings.Contains(sout, "SERVE PROVIDER key-ok=true") || !strings.Contains(sout, "PLACEHOLDER=sk-ant-api03-"+secrets.PlaceholderMark) || strings.Contains(sout, value) {
		t.Errorf("serve's command: %s", sout)
	}
	mustT(t, srv.Session.Close())

	st, _, code := plugin(t, dir, "status", instanceName)
	if code != 0 || !strings.Contains(st, "ANTHROPIC_API_KEY used 3 times") || !strings.Contains(st, "only with api.anthropic.com") {
		t.Errorf("status: %s", st)
	}
}
