package networkcmd

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/projectpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

func TestNextPolicy(t *testing.T) {
	for _, tc := range []struct {
		current, action string
		args            []string
		want, wantErr   string
	}{
		{"none", "allow", []string{"Example.com"}, "allow:example.com", ""},
		{"allow:@go", "allow", []string{"example.com:443", "@npm"}, "allow:@go,example.com:443,@npm", ""},
		{"allow:a.org", "allow", []string{"a.org"}, "allow:a.org", ""},
		{"allow:a.org", "allow", []string{"a.org:99999"}, "", `allow "a.org:99999"`},
		{"allow:a.org", "allow", []string{"@nope"}, "", "is not a preset"},
		{"open", "allow", []string{"a.org"}, "", "changes the guest user the agent works as"},
		{"allow:a.org,b.org:443", "deny", []string{"B.ORG:443"}, "allow:a.org", ""},
		{"allow:a.org", "deny", []string{"a.org"}, "none", ""},
		{"allow:a.org", "deny", []string{"c.org"}, "allow:a.org", ""}, // not allowed: nothing to do
		{"allow:@go,a.org", "deny", []string{"proxy.golang.org"}, "", "allowed by @go, not by an entry of its own"},
		{"allow:@go,a.org", "deny", []string{"proxy.golang.org"}, "", "set allow:sum.golang.org,storage.googleapis.com,a.org"},
		{"allow:*.a.org", "deny", []string{"x.a.org"}, "", "allowed by *.a.org"},
		{"allow:a.org", "deny", []string{"a.org:443"}, "", "allowed by a.org"},
		{"allow:a.org:443", "deny", []string{"a.org"}, "", "allowed by a.org:443"},
		{"none", "deny", []string{"a.org"}, "none", ""},
		{"open", "deny", []string{"a.org"}, "", "nothing can be denied without a policy"},
		{"none", "set", []string{"allow:@go"}, "allow:@go", ""},
		{"allow:a.org", "set", []string{"none"}, "none", ""},
		{"allow:a.org", "set", []string{"open"}, "", "limactl mcp serve --network=open"},
		{"open", "set", []string{"none"}, "", "limactl mcp serve --network=none"},
		{"open", "set", []string{"open"}, "open", ""},
		{"none", "set", []string{"allow:"}, "", "lists no host"},
	} {
		got, err := nextPolicy(tc.current, tc.action, tc.args, "")
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s %s %v: %q, %v; want an error containing %q", tc.current, tc.action, tc.args, got, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%s %s %v: %q, %v; want %q", tc.current, tc.action, tc.args, got, err, tc.want)
		}
	}
}

func TestLiveCommandLine(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var got *LiveOptions
	cmd := NewCmd(cmdutil.New(ios), func(_ context.Context, o *LiveOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"agent", "allow", "a.org:443", "@go", "--session", "s1", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Instance != "agent" || got.Action != "allow" || strings.Join(got.Args, " ") != "a.org:443 @go" || got.Session != "s1" || !got.JSON {
		t.Errorf("parsed %+v", got)
	}
	for _, args := range [][]string{{}, {"agent"}} {
		cmd := NewCmd(cmdutil.New(ios), func(context.Context, *LiveOptions) error { t.Fatal("ran"); return nil })
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "name the instance and what to do") {
			t.Errorf("%v: %v", args, err)
		}
	}
	// presets is still the subcommand.
	cmd = NewCmd(cmdutil.New(ios), func(context.Context, *LiveOptions) error { t.Fatal("ran live"); return nil })
	var sub *cobra.Command
	for _, c := range cmd.Commands() {
		if c.Name() == "presets" {
			sub = c
		}
	}
	if sub == nil {
		t.Fatal("no presets subcommand")
	}
	for _, bad := range []LiveOptions{{Action: "show", Args: []string{"x"}}, {Action: "allow"}, {Action: "set"}, {Action: "set", Args: []string{"none", "x"}}, {Action: "open"},
		{Action: "once"}, {Action: "once", Args: []string{"0123456789abcdeg"}}, {Action: "refuse", Args: []string{"0123456789abcdef", "0123456789abcdef"}},
		{Action: "once", Args: []string{"0123456789abcdef"}, Save: true}} {
		if err := bad.checkArgs(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if err := (&LiveOptions{Action: "once", Args: []string{"x"}}).checkArgs(); err == nil || !strings.Contains(err.Error(), `"held": true in limactl mcp watch`) {
		t.Errorf("once x: %v, want where the id comes from", err)
	}
	if err := (&LiveOptions{Action: "refuse", Args: []string{"0123456789abcdef"}}).checkArgs(); err != nil {
		t.Errorf("refuse ID: %v", err)
	}
}

// stoppedOpener opens the fixture's instance as a stopped one.
func stoppedOpener(store staging.Store) sessionopen.Opener {
	return func(context.Context, string) (*sessionopen.Target, error) {
		return &sessionopen.Target{Instance: &instance.Instance{Name: sessiontest.Instance}, Store: store, ConnErr: errors.New("instance is stopped")}, nil
	}
}

func setStoredNetwork(t *testing.T, f *sessiontest.Fixture, network string) {
	t.Helper()
	st, _, err := f.Store.Load(f.Workdir)
	if err != nil {
		t.Fatal(err)
	}
	st.Network = network
	if err := f.Store.Save(st, nil); err != nil {
		t.Fatal(err)
	}
}

func storedNetwork(t *testing.T, f *sessiontest.Fixture) string {
	t.Helper()
	st, _, err := f.Store.Load(f.Workdir)
	if err != nil {
		t.Fatal(err)
	}
	return staging.NetworkOf(st)
}

func runLive(open sessionopen.Opener, workdir string, asJSON bool, action string, args ...string) (string, error) {
	ios, _, out, _ := iostreams.Test()
	err := RunLive(context.Background(), &LiveOptions{IO: ios, Instance: sessiontest.Instance, Workdir: workdir, Action: action, Args: args, JSON: asJSON, Open: open})
	return out.String(), err
}

// On a stopped instance, a change is recorded with the session (and put in place at its next
// connect: the agent's Live reads it); open ↔ policy is refused with the restart to do.
func TestLiveChangeRecorded(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	open := stoppedOpener(f.Store)
	if _, err := runLive(open, f.Workdir, false, "allow", "a.org"); err == nil || !strings.Contains(err.Error(), "limactl mcp serve --network=allow:a.org") {
		t.Fatalf("allow on an open session: %v", err)
	}
	setStoredNetwork(t, f, "allow:@go")
	out, err := runLive(open, f.Workdir, false, "allow", "example.com:8443")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "policy:  allow:@go,example.com:8443 (was allow:@go): recorded; the instance is not running") {
		t.Errorf("allow:\n%s", out)
	}
	if got := storedNetwork(t, f); got != "allow:@go,example.com:8443" {
		t.Errorf("stored %q", got)
	}
	live := f.Store.LivePolicy(staging.SessionID(f.Workdir))()
	if live != "allow:proxy.golang.org,sum.golang.org,storage.googleapis.com,example.com:8443" {
		t.Errorf("the agent's next set-up would use %q", live)
	}
	out, err = runLive(open, f.Workdir, true, "deny", "example.com:8443")
	if err != nil {
		t.Fatal(err)
	}
	var res liveResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Policy != "allow:@go" || res.Previous != "allow:@go,example.com:8443" || res.Applied || len(res.Hosts) != 3 {
		t.Errorf("deny --json: %v\n%s", err, out)
	}
	if _, err := runLive(open, f.Workdir, false, "set", "open"); err == nil || !strings.Contains(err.Error(), "which a running server cannot do") {
		t.Errorf("set open: %v", err)
	}
	if got := storedNetwork(t, f); got != "allow:@go" {
		t.Errorf("stored %q after a refused change", got)
	}
	out, err = runLive(open, f.Workdir, false, "show")
	if err != nil || !strings.Contains(out, "policy:  allow:@go\n") || !strings.Contains(out, "hosts:   proxy.golang.org, sum.golang.org, storage.googleapis.com") {
		t.Errorf("show: %v\n%s", err, out)
	}
	if _, err := runLive(open, t.TempDir(), false, "show"); err == nil || !strings.Contains(err.Error(), "has no staged session") {
		t.Errorf("show elsewhere: %v", err)
	}
}

// once and refuse need a session under a policy and a running instance; they change no
// policy. (The real proxy holding a real connection, let through by once: test/e2e's
// TestNetworkPolicy, "allow once while watched".)
func TestLiveHeldDecisionRefusedWithoutAGuest(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	open := stoppedOpener(f.Store)
	if _, err := runLive(open, f.Workdir, false, "once", "0123456789abcdef"); err == nil || !strings.Contains(err.Error(), "policy is open: no connection is held") {
		t.Errorf("once on an open session: %v", err)
	}
	setStoredNetwork(t, f, "allow:a.org")
	if _, err := runLive(open, f.Workdir, false, "refuse", "0123456789abcdef"); err == nil || !strings.Contains(err.Error(), "is not running") {
		t.Errorf("refuse on a stopped instance: %v", err)
	}
	if got := storedNetwork(t, f); got != "allow:a.org" {
		t.Errorf("stored %q after refuse", got)
	}
}

// When the guest refuses the change (here: no passwordless sudo), the session's record keeps
// the policy it had: the host never says a policy is in force that the guest does not hold.
func TestLiveChangeGuestRefusedKeepsRecord(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	setStoredNetwork(t, f, "allow:a.org")
	_, err := runLive(f.Opener(), f.Workdir, false, "allow", "b.org")
	if err == nil {
		t.Fatal("the sshd's user has no sudo, yet the change went through")
	}
	if got := storedNetwork(t, f); got != "allow:a.org" {
		t.Errorf("stored %q after the guest refused: %v", got, err)
	}
}

// --save keeps the resulting policy as the project's on the host, outside the project (read
// back by serve and shell when no --network is given: sessionopen's tests); set --save works
// before the project has a session; show names the file.
func TestLiveSaveProjectPolicy(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	open := stoppedOpener(f.Store)
	setStoredNetwork(t, f, "none")
	ios, _, out, _ := iostreams.Test()
	err := RunLive(context.Background(), &LiveOptions{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Action: "allow", Args: []string{"example.com:ro"}, Save: true, Open: open})
	if err != nil {
		t.Fatal(err)
	}
	file, path, ok, err := projectpolicy.Load(f.Workdir)
	if err != nil || !ok || file.Network != "allow:example.com:ro" || strings.HasPrefix(path, f.Workdir) {
		t.Fatalf("the project's policy: %+v %q %v %v", file, path, ok, err)
	}
	if !strings.Contains(out.String(), "project: allow:example.com:ro saved in "+path) {
		t.Errorf("allow --save:\n%s", out)
	}
	if out, err := runLive(open, f.Workdir, false, "show"); err != nil || !strings.Contains(out, "project: allow:example.com:ro ("+path) {
		t.Errorf("show: %v\n%s", err, out)
	}
	// A project without a session: set --save only.
	other := t.TempDir()
	ios, _, out, _ = iostreams.Test()
	err = RunLive(context.Background(), &LiveOptions{IO: ios, Instance: sessiontest.Instance, Workdir: other, Action: "set", Args: []string{"allow:@pypi"}, Save: true, Open: open})
	if err != nil {
		t.Fatal(err)
	}
	if file, _, ok, err := projectpolicy.Load(other); err != nil || !ok || file.Network != "allow:@pypi" {
		t.Errorf("set --save without a session: %+v %v %v\n%s", file, ok, err, out)
	}
	ios, _, _, _ = iostreams.Test()
	if err := RunLive(context.Background(), &LiveOptions{IO: ios, Instance: sessiontest.Instance, Workdir: other, Action: "show", Save: true, Open: open}); err == nil || !strings.Contains(err.Error(), "--save keeps a changed policy") {
		t.Errorf("show --save: %v", err)
	}
}
