package netpolicy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/keyauth"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBkzCCATmgAwIBAgIBATAKBggqhkjOPQQDAjAA\n-----END CERTIFICATE-----\n"

func TestParseSecretsSetup(t *testing.T) {
	good := SecretsSetup{Hosts: []string{"api.anthropic.com:443", "github.com:443"}, CAPEM: testCA,
		Env: []string{"ANTHROPIC_API_KEY=sk-ant-api03-LMCPPLACEHOLDERabcdefghijklmnopqrstuv"}}
	data, _ := json.Marshal(good)
	if _, err := ParseSecretsSetup(data); err != nil {
		t.Fatal(err)
	}
	withPort := good
	withPort.RelayPort, withPort.RelayKey = 40123, keyauth.NewKey()
	data, _ = json.Marshal(withPort)
	if _, err := ParseSecretsSetup(data); err != nil {
		t.Fatalf("with the relay's port: %v", err)
	}
	port := func(p int, key string) SecretsSetup {
		s := good
		s.RelayPort, s.RelayKey = p, key
		return s
	}
	for name, bad := range map[string]SecretsSetup{
		"a port without a key": port(40123, ""),
		"a key without a port": port(0, keyauth.NewKey()),
		"a short key":          port(40123, keyauth.NewKey()[:62]),
		"a key not hex":        port(40123, "zz"+keyauth.NewKey()[2:]),
		"port 65536":           port(65536, keyauth.NewKey()),
		"port -1":              port(-1, keyauth.NewKey()),
		"no host":              {CAPEM: testCA},
		"no port":              {Hosts: []string{"api.anthropic.com"}, CAPEM: testCA},
		"upper case":           {Hosts: []string{"API.anthropic.com:443"}, CAPEM: testCA},
		"an IP":                {Hosts: []string{"1.2.3.4:443"}, CAPEM: testCA},
		"port 0":               {Hosts: []string{"a.test:0"}, CAPEM: testCA},
		"no CA":                {Hosts: []string{"a.test:443"}},
		"two CAs":              {Hosts: []string{"a.test:443"}, CAPEM: testCA + testCA},
		"a key":                {Hosts: []string{"a.test:443"}, CAPEM: strings.ReplaceAll(testCA, "CERTIFICATE", "PRIVATE KEY")},
		"a value":              {Hosts: []string{"a.test:443"}, CAPEM: testCA, Env: []string{"ANTHROPIC_API_KEY=sk-ant-api03-realvalue0123456789abcdef"}},
		"a newline":            {Hosts: []string{"a.test:443"}, CAPEM: testCA, Env: []string{"X=LMCPPLACEHOLDERabcdefghijklmnopqrstuv\nLD_PRELOAD=/x"}},
		"a lower name":         {Hosts: []string{"a.test:443"}, CAPEM: testCA, Env: []string{"path=LMCPPLACEHOLDERabcdefghijklmnopqrstuv"}},
		"a name with =":        {Hosts: []string{"a.test:443"}, CAPEM: testCA, Env: []string{"=LMCPPLACEHOLDERabcdefghijklmnopqrstuv"}},
		"a host with path":     {Hosts: []string{"a.test/x:443"}, CAPEM: testCA},
	} {
		data, _ := json.Marshal(bad)
		if _, err := ParseSecretsSetup(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseSecretsSetup([]byte(strings.Repeat(" ", MaxSecretsSetup+1))); err == nil {
		t.Error("an oversized setup accepted")
	}
}

func TestPolicyWithHosts(t *testing.T) {
	p, _ := Parse("allow:@go,*.anthropic.com")
	q := p.WithHosts([]string{"api.anthropic.com", "github.com", "GitHub.com."})
	if got := q.String(); got != "allow:@go,*.anthropic.com,github.com" {
		t.Errorf("got %s", got)
	}
	if !q.Allows("github.com") || !q.Allows("proxy.golang.org") {
		t.Error("not allowed")
	}
	n, _ := Parse("none")
	if n.WithHosts([]string{"a.test"}).String() != "none" {
		t.Error("none changed")
	}
}
