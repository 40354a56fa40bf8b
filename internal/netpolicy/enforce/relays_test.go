package enforce

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

const (
	relayOld = "00000000000000aa"
	relayNew = "00000000000000bb"
)

// Two processes of one session, each with its relay (relays.go): the proxy hands a bound
// host to the newest relay that binds it and answers, and to an older one when the newer one's
// process has ended; a host only the older binds always goes to it; a host neither binds
// (any more) is never handed to a relay.
func TestProxyTriesTheRelaysNewestFirst(t *testing.T) {
	f := startSecretsFixture(t)
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	both := fmt.Sprintf("localhost:%d", port)
	writePolicy(t, f.layout, UserPolicy{User: "lmcp-test", UID: f.relayUIDAgent(t), Policy: "allow:localhost,bound.test,old.test",
		SecretHosts: []string{"bound.test:443", both, "old.test:443"}, RelayUID: f.relayUID,
		Relays: []RelayEntry{
			{Name: relayOld, Hosts: []string{"bound.test:443", both, "old.test:443"}},
			{Name: relayNew, Hosts: []string{"bound.test:443", both}},
		}})
	f.restartProxy(t)
	f.startNamedRelay(t, relayOld)
	if out := f.getThrough(t, "http://bound.test:443/"); !strings.Contains(out, "relay got bound.test:443 by "+relayOld) {
		t.Fatalf("only the older relay listening: %s", out)
	}
	stopNew := f.startNamedRelay(t, relayNew)
	if out := f.getThrough(t, "http://bound.test:443/"); !strings.Contains(out, "relay got bound.test:443 by "+relayNew) {
		t.Fatalf("both listening: %s, want the newer", out)
	}
	if out := f.getThrough(t, "http://old.test:443/"); !strings.Contains(out, "relay got old.test:443 by "+relayOld) {
		t.Fatalf("a host only the older binds: %s", out)
	}
	stopNew() // its process ended: its socket is left, nobody listens
	if out := f.getThrough(t, "http://"+both+"/"); !strings.Contains(out, "relay got "+both+" by "+relayOld) {
		t.Fatalf("the newer one gone: %s, want the older", out)
	}

	// Kept at the next set-up: the older (it answers), not the newer, whose socket goes.
	up, _, err := readPolicyFile(f.layout.policyFile("lmcp-test"))
	if err != nil {
		t.Fatal(err)
	}
	kept := keptRelays(f.layout, up, nil)
	if len(kept) != 1 || kept[0].Name != relayOld {
		t.Fatalf("kept %+v, want the older relay alone", kept)
	}
	if _, err := os.Lstat(filepath.Join(f.dir, netpolicy.RelaySocketName(relayNew))); !os.IsNotExist(err) {
		t.Errorf("the ended relay's socket was not removed: %v", err)
	}
	// The process setting up again is not kept twice: its entry is made anew.
	if kept := keptRelays(f.layout, up, &netpolicy.SecretsSetup{Relay: relayOld}); len(kept) != 0 {
		t.Errorf("the set-up's own relay kept: %+v", kept)
	}
	// The probe reached the older relay without a line: it still answers.
	if out := f.getThrough(t, "http://old.test:443/"); !strings.Contains(out, "by "+relayOld) {
		t.Fatalf("after the probe: %s", out)
	}

	// No relay left: a 502, never the host itself.
	up.withRelays(kept[:0])
	up.SecretHosts, up.RelayUID = []string{"bound.test:443"}, f.relayUID
	up.Relays = []RelayEntry{{Name: relayNew, Hosts: []string{"bound.test:443"}}}
	writePolicy(t, f.layout, up)
	out, code := f.curlAs(t, "-i", "-p", "http://bound.test:443/")
	if code == 0 || strings.Contains(out, "relay got") || !strings.Contains(f.lastReason(t), "no relay listening") {
		t.Fatalf("no relay of the host listening: exit %d (%s)\n%s", code, f.lastReason(t), out)
	}
}

// getThrough fetches url as the agent through the proxy's tunnel (curl -p), failing the test
// when curl does.
func (f *secretsFixture) getThrough(t *testing.T, url string) string {
	t.Helper()
	out, code := f.curlAs(t, "-p", url)
	if code != 0 {
		t.Fatalf("%s: exit %d (%s)\n%s", url, code, f.lastReason(t), out)
	}
	return out
}

// relayUIDAgent is the agent's uid in the fixture (the policy file's UID).
func (f *secretsFixture) relayUIDAgent(t *testing.T) int {
	t.Helper()
	up, _, err := readPolicyFile(f.layout.policyFile("lmcp-test"))
	if err != nil {
		t.Fatal(err)
	}
	return up.UID
}

// A policy file's relays are checked: names that make a socket name, each once, hosts within
// the bound ones; withRelays makes the bound hosts theirs together, the newest kept.
func TestRelaysChecked(t *testing.T) {
	base := UserPolicy{User: "lmcp-x", UID: 1234, Policy: "allow:a.test,b.test", SecretHosts: []string{"a.test:443", "b.test:443"}, RelayUID: 1000}
	ok := base
	ok.Relays = []RelayEntry{{Name: relayOld, Hosts: []string{"a.test:443"}}, {Name: relayNew, Hosts: []string{"b.test:443", "a.test:443"}}}
	if _, err := ok.parsed(); err != nil {
		t.Fatalf("two good relays: %v", err)
	}
	for name, relays := range map[string][]RelayEntry{
		"a path":        {{Name: "../../etc/x", Hosts: []string{"a.test:443"}}},
		"upper case":    {{Name: "00000000000000AA", Hosts: []string{"a.test:443"}}},
		"twice":         {{Name: relayOld}, {Name: relayOld}},
		"unbound host":  {{Name: relayOld, Hosts: []string{"c.test:443"}}},
		"unruled":       {{Name: relayOld, RuleTargets: []string{"a.test:443"}}},
		"too many":      slices.Repeat([]RelayEntry{{}}, maxRelays+1),
		"no bound host": nil,
	} {
		u := base
		u.Relays = relays
		if name == "no bound host" {
			u.SecretHosts, u.RelayUID, u.Relays = nil, 0, []RelayEntry{{Name: relayOld}}
		}
		if _, err := u.parsed(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if got := ok.relaysFor("a.test:443", false); !slices.Equal(got, []string{relayNew, relayOld}) {
		t.Errorf("relaysFor a.test: %v, want newest first", got)
	}
	if got := ok.relaysFor("a.test:443", true); len(got) != 0 {
		t.Errorf("relaysFor a rule target no relay reads: %v", got)
	}
	if got := base.relaysFor("a.test:443", false); !slices.Equal(got, []string{""}) {
		t.Errorf("an older build's file: %v, want its one relay", got)
	}
	var u UserPolicy
	many := make([]RelayEntry, maxRelays+2)
	for i := range many {
		many[i] = RelayEntry{Name: fmt.Sprintf("%016x", i), Hosts: []string{fmt.Sprintf("h%d.test:443", i)}}
	}
	u.withRelays(many)
	if len(u.Relays) != maxRelays || u.Relays[maxRelays-1].Name != many[len(many)-1].Name || slices.Contains(u.SecretHosts, "h0.test:443") || !slices.Contains(u.SecretHosts, "h17.test:443") {
		t.Errorf("withRelays beyond the cap: %d relays, hosts %v", len(u.Relays), u.SecretHosts)
	}
}

func TestMergeEnv(t *testing.T) {
	first := "NODE_EXTRA_CA_CERTS=/ca\nA=new\n"
	got := mergeEnv(first, "A=old\nB=kept\nNODE_EXTRA_CA_CERTS=/other\n\n")
	if got != first+"B=kept\n" {
		t.Errorf("mergeEnv: %q", got)
	}
	if got := mergeEnv("", "B=kept\n"); got != "B=kept\n" {
		t.Errorf("mergeEnv of nothing new: %q", got)
	}
}
