package guest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// An agent is set up only for names and paths limactl-mcp makes.
func TestAgentCheck(t *testing.T) {
	good := Agent{User: "lmcp-0123456789ab", Policy: "allow:example.com", Own: "/home/me/proj", Carry: []string{".cache/limactl-mcp/sessions/0123456789ab"}}
	if err := good.check(); err != nil {
		t.Fatalf("good agent: %v", err)
	}
	bad := []Agent{
		{User: "root", Policy: "none"},
		{User: "lmcp-", Policy: "none"},
		{User: "lmcp-ABC", Policy: "none"},
		{User: "lmcp-a;rm", Policy: "none"},
		{User: "lmcp-a", Policy: "open"},
		{User: "lmcp-a", Policy: ""},
		{User: "lmcp-a", Policy: "none\nrm -rf /"},
		{User: "lmcp-a", Policy: "none", Own: "relative"},
		{User: "lmcp-a", Policy: "none", Own: "/"},
		{User: "lmcp-a", Policy: "none", Own: "/a/../b"},
		{User: "lmcp-a", Policy: "none", Carry: []string{"/etc/shadow"}},
		{User: "lmcp-a", Policy: "none", Carry: []string{"../x"}},
	}
	for _, a := range bad {
		if err := a.check(); err == nil {
			t.Errorf("%+v: accepted", a)
		}
	}
}

// What `net ensure` printed is guest output: anything but a well-formed answer for this user is
// refused, never used.
func TestAgentParseSetup(t *testing.T) {
	a := &Agent{User: "lmcp-abc", Policy: "none"}
	ok := `{"user":"lmcp-abc","uid":1001,"home":"/var/lib/limactl-mcp/agents/lmcp-abc","policy":"none","proxy":"127.0.0.1:3129","env_file":"/etc/limactl-mcp/net/lmcp-abc.env","log":"/var/log/limactl-mcp/net/lmcp-abc.jsonl"}`
	s, err := a.parseSetup("some profile noise\n" + ok + "\n")
	if err != nil || s.UID != 1001 || s.Home != "/var/lib/limactl-mcp/agents/lmcp-abc" {
		t.Fatalf("good answer: %+v, %v", s, err)
	}
	for _, bad := range []string{
		"",
		"garbage",
		strings.Replace(ok, `"lmcp-abc","uid"`, `"lmcp-other","uid"`, 1),
		strings.Replace(ok, `1001`, `0`, 1),
		strings.Replace(ok, `"home":"/var/lib/limactl-mcp/agents/lmcp-abc"`, `"home":"/"`, 1),
		strings.Replace(ok, `"home":"/var/lib/limactl-mcp/agents/lmcp-abc"`, `"home":"relative"`, 1),
		strings.Replace(ok, `"env_file":"/etc`, `"env_file":"etc`, 1),
		strings.Replace(ok, `"log":"/var`, `"log":"var`, 1),
		`{"user":"lmcp-abc","uid":1001,"home":"/h","pad":"` + strings.Repeat("x", 5000) + `"}`,
	} {
		if _, err := a.parseSetup(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// The agent's scripts run as its user, through the verified runner's `net as`, from its home,
// whatever they contain: run here through sh with a stand-in sudo that checks its options and
// a stand-in runner that checks its own and runs the rest. Without a runner nothing runs.
func TestAgentAs(t *testing.T) {
	dir := t.TempDir()
	runner := filepath.Join(dir, "runner dir", "runner-x")
	os.MkdirAll(filepath.Dir(runner), 0o755)
	fakeSudo := "#!/bin/sh\n[ \"$1\" = -n ] || { echo \"bad sudo args: $*\" >&2; exit 9; }\nshift\nexec \"$@\"\n"
	fakeRunner := "#!/bin/sh\n[ \"$1 $2 $3 $4 $5\" = 'net as --user lmcp-abc --' ] || { echo \"bad runner args: $*\" >&2; exit 9; }\nshift 5\nexec \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "sudo"), []byte(fakeSudo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runner, []byte(fakeRunner), 0o755); err != nil {
		t.Fatal(err)
	}
	a := &Agent{User: "lmcp-abc", Policy: "none"}
	script := `printf '%s|' "it's" "$(pwd)" 'a"b' '$HOME'`
	run := func(cmdline string) (string, error) {
		cmd := exec.Command("sh", "-c", cmdline)
		cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "HOME=" + dir}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(a.As(runner, script))
	if want := "it's|" + dir + `|a"b|$HOME|`; err != nil || out != want {
		t.Fatalf("got %q, %v; want %q", out, err, want)
	}
	if out, err := run(a.As("", "echo ran")); err == nil || strings.Contains(out, "ran\n") {
		t.Fatalf("without a runner: %q, %v; want nothing run, an error", out, err)
	}
}

// A set-up puts in place the policy the session holds now (Live), not the one the connection
// was made with: a live change survives a reconnect. A switch to open (which a running
// connection cannot make) and an unreadable answer keep the connection's policy.
func TestSetupUsesTheLivePolicy(t *testing.T) {
	now := "allow:a.org,b.org:443"
	a := &Agent{User: "lmcp-abc", Policy: "allow:a.org", Live: func() string { return now }}
	if s := a.setupScript("/x/runner", a.CurrentPolicy()); !strings.Contains(s, "--policy allow:a.org,b.org:443)") {
		t.Errorf("set-up script:\n%s", s)
	}
	for _, keep := range []string{"", "open", "allow:a.org\nrm -rf /"} {
		now = keep
		if got := a.CurrentPolicy(); got != "allow:a.org" {
			t.Errorf("Live %q: policy %q", keep, got)
		}
	}
}

// The secrets' bound hosts join whichever policy a set-up puts in place: the connection's, and
// the one the session's record holds (a second run of a session, a live change). Before, a
// session resumed with --secret was set up under its record's policy without them, and the
// guest refused it ("bound host api.anthropic.com is not on the allowlist").
func TestSetupAddsTheBoundHosts(t *testing.T) {
	now := ""
	sec := &AgentSecrets{Setup: netpolicy.SecretsSetup{Hosts: []string{"api.anthropic.com:443", "api.openai.com:443", "api.openai.com:8443"}}}
	a := &Agent{User: "lmcp-abc", Policy: "allow:example.invalid", Live: func() string { return now }, Secrets: sec}
	for _, c := range []struct{ live, want string }{
		{"", "allow:example.invalid,api.anthropic.com,api.openai.com"},
		{"allow:example.invalid", "allow:example.invalid,api.anthropic.com,api.openai.com"},
		{"allow:@go,b.org:443", "allow:@go,b.org:443,api.anthropic.com,api.openai.com"},
		{"allow:api.anthropic.com", "allow:api.anthropic.com,api.openai.com"},
	} {
		now = c.live
		if got := a.CurrentPolicy(); got != c.want {
			t.Errorf("record %q: policy %q, want %q", c.live, got, c.want)
		}
		if s := a.setupScript("/x/runner", a.CurrentPolicy()); !strings.Contains(s, "--policy "+shellquote.Quote(c.want)) {
			t.Errorf("record %q: set-up script:\n%s", c.live, s)
		}
	}
	a.Secrets = nil
	now = "allow:example.invalid"
	if got := a.CurrentPolicy(); got != "allow:example.invalid" {
		t.Errorf("without secrets: %q", got)
	}
}

// A live change recorded while a set-up runs (which may have been applied before the set-up's
// older policy, undoing it) makes the set-up run again under it; a policy that holds still
// takes one run; one that never does is bounded; a failed run is not repeated.
func TestSetUpRunsAgainAfterALiveChange(t *testing.T) {
	record := "allow:a.org"
	a := &Agent{User: "lmcp-abc", Policy: "allow:a.org", Live: func() string { return record }}
	var ran []string
	out, policy, err := a.setUpUnderCurrentPolicy(func(p string) (string, error) {
		ran = append(ran, p)
		if len(ran) == 1 {
			record = "allow:a.org,b.org" // the person allows b.org while the first set-up runs
		}
		return "ok " + p, nil
	})
	if err != nil || policy != "allow:a.org,b.org" || out != "ok allow:a.org,b.org" || strings.Join(ran, "|") != "allow:a.org|allow:a.org,b.org" {
		t.Errorf("a change during the set-up: ran %q, out %q, policy %q, %v", ran, out, policy, err)
	}

	ran = nil
	if _, _, err := a.setUpUnderCurrentPolicy(func(p string) (string, error) { ran = append(ran, p); return "", nil }); err != nil || len(ran) != 1 {
		t.Errorf("a policy that holds still: ran %q, %v", ran, err)
	}

	ran = nil
	n := 0
	a.Live = func() string { n++; return fmt.Sprintf("allow:n%d.org", n) }
	if _, _, err := a.setUpUnderCurrentPolicy(func(p string) (string, error) { ran = append(ran, p); return "", nil }); err != nil || len(ran) != maxSetupAttempts {
		t.Errorf("a policy that never holds still: ran %d times (%q), %v", len(ran), ran, err)
	}

	ran = nil
	if _, _, err := a.setUpUnderCurrentPolicy(func(p string) (string, error) { ran = append(ran, p); return "", errors.New("sudo failed") }); err == nil || len(ran) != 1 {
		t.Errorf("a failed set-up: ran %q, %v", ran, err)
	}
}
