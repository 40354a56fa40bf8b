package enforce

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

func TestParseSubIDs(t *testing.T) {
	got, err := parseSubIDs("lima:100000:65536\n\n# a comment\nlmcp-a:165536:65536\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != (idRange{Name: "lmcp-a", First: 165536, Count: 65536}) || got[1].last() != 231071 {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{"lima:100000\n", "lima:x:65536\n", "lima:1:-1\n", "a:1:2:3\n"} {
		if _, err := parseSubIDs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestPickSubIDs(t *testing.T) {
	lima := idRange{Name: "lima", First: 100000, Count: 65536}
	// A new agent gets the block above every range there is.
	first, have, err := pickSubIDs([]idRange{lima}, "lmcp-a", 1001, []int{0, 1000, 1001})
	if err != nil || have || first != 165536 {
		t.Fatalf("new range: %d %v %v", first, have, err)
	}
	// No range at all: from subIDBase.
	if first, _, err := pickSubIDs(nil, "lmcp-a", 1001, nil); err != nil || first != subIDBase {
		t.Fatalf("empty file: %d %v", first, err)
	}
	// A user's id inside the candidate block moves it on past that id.
	if first, _, err := pickSubIDs([]idRange{lima}, "lmcp-a", 1001, []int{170000}); err != nil || first != 170001 {
		t.Fatalf("past a uid: %d %v", first, err)
	}
	// One it has (by name or by uid) and that is its own: kept.
	for _, name := range []string{"lmcp-a", "1001"} {
		mine := idRange{Name: name, First: 165536, Count: 65536}
		if _, have, err := pickSubIDs([]idRange{lima, mine}, "lmcp-a", 1001, nil); err != nil || !have {
			t.Fatalf("%s: existing range: %v %v", name, have, err)
		}
	}
	// One that overlaps another user's (the Lima user's, or another agent's) is refused:
	// their containers would share ids.
	over := idRange{Name: "lmcp-a", First: 150000, Count: 65536}
	if _, _, err := pickSubIDs([]idRange{lima, over}, "lmcp-a", 1001, nil); err == nil || !strings.Contains(err.Error(), "overlap those of lima") {
		t.Fatalf("overlap: %v", err)
	}
	// One that holds a user's uid is refused.
	mine := idRange{Name: "lmcp-a", First: 165536, Count: 65536}
	if _, _, err := pickSubIDs([]idRange{lima, mine}, "lmcp-a", 1001, []int{200000}); err == nil {
		t.Fatal("a range holding a uid was kept")
	}
	// Too small a range: a new one is added.
	small := idRange{Name: "lmcp-a", First: 165536, Count: 10}
	if first, have, err := pickSubIDs([]idRange{lima, small}, "lmcp-a", 1001, nil); err != nil || have || first != 165546 {
		t.Fatalf("small range: %d %v %v", first, have, err)
	}
}

func TestChainRulesRefuseSubUIDs(t *testing.T) {
	users := []UserPolicy{{User: "lmcp-a", UID: 1002, Policy: "none", SubUIDs: []idRange{{Name: "lmcp-a", First: 165536, Count: 65536}}}}
	got := strings.Join(chainRules(ipv4, users), "\n")
	want := "-A LIMACTL-MCP -m owner --uid-owner 1002 -j LIMACTL-MCP-REFUSE\n-A LIMACTL-MCP -m owner --uid-owner 165536-231071 -j LIMACTL-MCP-REFUSE\n"
	if !strings.Contains(got, want) {
		t.Fatalf("rules:\n%s\nwant them to hold:\n%s", got, want)
	}
	if strings.Contains(got, "--uid-owner 165536-231071 -j RETURN") {
		t.Fatal("subordinate uids reach loopback")
	}
}

func TestDockerUnitAndEnv(t *testing.T) {
	l := DefaultLayout()
	unit := dockerUnitText(l, dockerTools{RootlessKit: "/usr/bin/rootlesskit"})
	for _, want := range []string{
		"User=%i\n",
		"Environment=XDG_RUNTIME_DIR=/var/lib/limactl-mcp/agents/%i/.docker-run\n",
		"EnvironmentFile=-/etc/limactl-mcp/net/%i.docker.env\n",
		"ExecStart=/usr/bin/rootlesskit --net=slirp4netns ",
		" /bin/sh /etc/limactl-mcp/net/docker-child.sh\n",
		"KillMode=control-group\n",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if strings.Contains(unit, "--disable-host-loopback") {
		t.Error("the daemon cannot reach the proxy on the guest's loopback")
	}
	if got := DockerEnv(l, "lmcp-a"); got != "DOCKER_HOST=unix:///var/lib/limactl-mcp/agents/lmcp-a/.docker-run/docker.sock\n" {
		t.Errorf("DockerEnv: %q", got)
	}
	none, _ := netpolicy.Parse("none")
	if got := dockerDaemonEnv(none, l.ProxyAddr()); got != "" {
		t.Errorf("none: daemon env %q", got)
	}
	allow, err := netpolicy.Parse("allow:example.com")
	if err != nil {
		t.Fatal(err)
	}
	if got := dockerDaemonEnv(allow, l.ProxyAddr()); !strings.Contains(got, "HTTPS_PROXY=http://10.0.2.2:929\n") {
		t.Errorf("allow: daemon env %q", got)
	}
}
