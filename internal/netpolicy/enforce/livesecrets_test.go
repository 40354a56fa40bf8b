package enforce

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// A live change of a session's policy (`limactl mcp network … allow`) keeps what its set-up
// gave for its secrets: the bound hosts (and their place in the allowlist), the relay's owner
// and the placeholders' lines of the environment; without secrets there is nothing to keep.
func TestLiveChangeKeepsSecrets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: root's files are read only when root owns them")
	}
	l := Layout{ConfigDir: t.TempDir(), ProxyAddrs: []string{"10.0.2.15:929"}}
	held, err := netpolicy.Parse("allow:example.com,api.anthropic.com")
	if err != nil {
		t.Fatal(err)
	}
	up := UserPolicy{User: "lmcp-x", UID: 1234, Policy: held.String(), SecretHosts: []string{"api.anthropic.com:443"}, RelayUID: 1000}
	data, _ := json.Marshal(up)
	if err := os.WriteFile(l.policyFile("lmcp-x"), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	secretLines := "NODE_EXTRA_CA_CERTS=/etc/ca.crt\nANTHROPIC_API_KEY=sk-ant-api03-LMCPPLACEHOLDERabc\n"
	if err := os.WriteFile(l.envFile("lmcp-x"), []byte(ProxyEnv(held, l.ProxyAddr())+secretLines), 0o640); err != nil {
		t.Fatal(err)
	}
	k, ok := keptSecrets(l, "lmcp-x")
	if !ok {
		t.Fatal("a session with secrets: nothing kept")
	}
	if !slices.Equal(netpolicy.BoundNames(k.up.SecretHosts), []string{"api.anthropic.com"}) || !slices.Equal(k.up.SecretHosts, up.SecretHosts) || k.up.RelayUID != 1000 {
		t.Errorf("kept %+v", k)
	}
	if k.env != secretLines {
		t.Errorf("kept environment %q, want %q", k.env, secretLines)
	}
	next, _ := netpolicy.Parse("allow:example.com,proxy.golang.org")
	if got := next.WithHosts(netpolicy.BoundNames(k.up.SecretHosts)); !got.Allows("api.anthropic.com") || !got.Allows("proxy.golang.org") {
		t.Errorf("the new allowlist %s lost a bound host or the change", got)
	}

	// A policy file behind a link, or a session without secrets: nothing is kept.
	link := filepath.Join(l.ConfigDir, "lmcp-y.json")
	if err := os.Symlink(l.policyFile("lmcp-x"), link); err != nil {
		t.Fatal(err)
	}
	if _, ok := keptSecrets(l, "lmcp-y"); ok {
		t.Error("a policy file behind a link: something kept")
	}
	up.SecretHosts, up.RelayUID = nil, 0
	data, _ = json.Marshal(up)
	if err := os.WriteFile(l.policyFile("lmcp-x"), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := keptSecrets(l, "lmcp-x"); ok {
		t.Error("a session without secrets: something kept")
	}
}
