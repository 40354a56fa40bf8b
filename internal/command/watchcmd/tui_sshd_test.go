package watchcmd_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/command/watchcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/projectpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
)

// watchHelperEnv makes the test binary run `watch` on its terminal (TestMain): the real
// command, its TUI on a tmux pane, reading the record from a real sshd.
const watchHelperEnv = "LMCP_WATCH_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(watchHelperEnv) == "1" {
		os.Exit(watchHelper())
	}
	os.Exit(m.Run())
}

// watchHelper runs `watch INSTANCE` on the process's own terminal. The record is read from the
// sshd the environment names; the instance is opened without a connection of its own, as a
// stopped one is: the sshd's user has no sudo to put a policy in place in the "guest", so a
// decision is recorded with the session (in force at its next connect), by the same change
// `network allow` makes.
func watchHelper() int {
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	key, err := os.ReadFile(os.Getenv("LMCP_W_KEY"))
	if err != nil {
		return fail(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return fail(err)
	}
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(os.Getenv("LMCP_W_HOSTKEY")))
	if err != nil {
		return fail(err)
	}
	target := &sshlink.Target{Name: sessiontest.Instance, Addr: os.Getenv("LMCP_W_ADDR"), User: os.Getenv("LMCP_W_USER"),
		Signers: []ssh.Signer{signer}, HostKeyCallback: ssh.FixedHostKey(hostKey), Arch: runtime.GOARCH}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	conn := guest.New(func(context.Context) (*sshlink.Target, error) { return target, nil }, guest.Options{Logger: log, NoLoginShell: true})
	defer conn.Close()
	record := os.Getenv("LMCP_W_RECORD")
	opts := &watchcmd.Options{
		IO: iostreams.System(), Instance: sessiontest.Instance, Workdir: os.Getenv("LMCP_W_WORKDIR"), Interval: 100 * time.Millisecond,
		Open: func(_ context.Context, name string) (*sessionopen.Target, error) {
			return &sessionopen.Target{Instance: &instance.Instance{Name: name, Status: "Running"}, Store: staging.Store{Dir: os.Getenv("LMCP_W_STORE")}}, nil
		},
		ReadRecord: func(ctx context.Context, _ *sessionopen.Target, _, _ string) ([]byte, error) {
			return conn.ReadFile(ctx, record, netpolicy.MaxRecordBytes)
		},
		// The sshd's user has no sudo for `net decide`: the decision is written down for the
		// test to read.
		Decide: func(_ context.Context, _ *sessionopen.Target, user, id, decision string) error {
			f, err := os.OpenFile(os.Getenv("LMCP_W_DECIDED"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = fmt.Fprintf(f, "%s %s %s\n", user, id, decision)
			return err
		},
	}
	if err := watchcmd.Run(context.Background(), opts); err != nil {
		fmt.Println("watch failed:", err)
		return 1
	}
	fmt.Println("watch done")
	return 0
}

// watch in a real terminal: the blocked destinations newest first with their counts, a
// hostile host name escaped; a allows the chosen one for the session (the session's policy
// has it after), s allows one and saves the project's policy, a destination whose name no
// policy can hold is refused with the reason, d hides one; a new attempt shows live, and an
// allowed destination refused again comes back.
func TestWatchTUI(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	setStoredNetwork(t, f, "allow:a.test")
	writer := guesttest.Connect(t, f.Srv, guest.Options{NoLoginShell: true})
	t0 := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	entries := []netpolicy.Entry{
		blockedEntry(t0.Add(1*time.Second), "b.test", 443),
		blockedEntry(t0.Add(2*time.Second), "evil\x1b[2J.test", 443),
		blockedEntry(t0.Add(3*time.Second), "c.test", 8080),
		blockedEntry(t0.Add(4*time.Second), "c.test", 8080),
	}
	writeRecord(t, f, writer, entries...)

	s := startWatchTUI(t, f, config, 120)
	const wait = time.Minute
	stored := func() string {
		t.Helper()
		st, _, err := f.Store.Load(f.Workdir)
		if err != nil {
			t.Fatal(err)
		}
		return staging.NetworkOf(st)
	}

	scr := s.WaitFor(wait, "policy: allow:a.test", "c.test:8080", "2 attempts", `evil\x1b[2J.test:443`, "b.test:443")
	c, evil, b := strings.Index(scr, "> c.test:8080"), strings.Index(scr, `  evil\x1b[2J.test:443`), strings.Index(scr, "  b.test:443")
	if c < 0 || evil < c || b < evil {
		t.Errorf("not newest first, the newest chosen:\n%s", scr)
	}
	s.Keys("a")
	s.WaitFor(wait, "allowed c.test:8080: policy allow:a.test,c.test:8080 (was allow:a.test), recorded", "policy: allow:a.test,c.test:8080")
	if got := stored(); got != "allow:a.test,c.test:8080" {
		t.Errorf("the session's policy after a: %q", got)
	}
	s.WaitFor(wait, `> evil\x1b[2J.test:443`)
	s.Keys("a")
	s.WaitFor(wait, `refused: allow evil\x1b[2J.test:443: `)
	if got := stored(); got != "allow:a.test,c.test:8080" {
		t.Errorf("the session's policy after a refused allow: %q", got)
	}
	s.Keys("d")
	s.WaitFor(wait, `denied evil\x1b[2J.test:443: it stays blocked`, "> b.test:443")
	s.Keys("s")
	s.WaitFor(wait, "allowed b.test:443: policy allow:a.test,c.test:8080,b.test:443 (was allow:a.test,c.test:8080), recorded", "saved as the project's policy")
	if file, _, ok, err := projectpolicy.Load(f.Workdir); err != nil || !ok || file.Network != "allow:a.test,c.test:8080,b.test:443" {
		t.Errorf("the project's policy after s: %+v %v %v", file, ok, err)
	}
	scr = s.WaitFor(wait, "no blocked attempt (yet)")
	if strings.Contains(scr, "evil") && !strings.Contains(scr, "denied evil") {
		t.Errorf("the denied destination is listed again:\n%s", scr)
	}
	// The agent tries c.test:8080 again (refused: say, before the guest took the change) and
	// a new host: both show, with their counts.
	entries = append(entries, blockedEntry(t0.Add(5*time.Second), "d.test", 443), blockedEntry(t0.Add(6*time.Second), "c.test", 8080))
	writeRecord(t, f, writer, entries...)
	scr = s.WaitFor(wait, "> c.test:8080", "3 attempts", "  d.test:443")
	if strings.Contains(scr, "  evil") {
		t.Errorf("the denied destination is listed again:\n%s", scr)
	}
	s.Keys("q")
	s.WaitFor(wait, "watch done")
}

// watch in a real terminal with connections the guest's proxy holds: listed first, with the
// time left and a hostile name escaped; o allows the chosen one once and d refuses the next,
// each through the decision (the guest's `net decide`), which leaves the list; o on a
// destination refused already says what to do instead.
func TestWatchTUIHeld(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	setStoredNetwork(t, f, "allow:a.test")
	writer := guesttest.Connect(t, f.Srv, guest.Options{NoLoginShell: true})
	t0 := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	held := []netpolicy.HeldConn{
		{ID: "0123456789abcdef", Host: "h.test", Port: 443, Since: t0, SecondsLeft: 50},
		{ID: "fedcba9876543210", Host: "evil\x1b[2J.test", Port: 80, Since: t0, SecondsLeft: 30},
	}
	writeRecordHeld(t, f, writer, held, blockedEntry(t0, "b.test", 443))
	decided := t.TempDir() + "/decided"

	s := startWatchTUI(t, f, config, 140, "LMCP_W_DECIDED="+decided)
	const wait = time.Minute
	readDecided := func() string {
		data, _ := os.ReadFile(decided)
		return string(data)
	}
	user := staging.AgentUser(staging.SessionID(f.Workdir))

	scr := s.WaitFor(wait, "> HELD h.test:443", "s left", `  HELD evil\x1b[2J.test:80`, "  b.test:443", "o allow once")
	if strings.Index(scr, "HELD h.test") > strings.Index(scr, "b.test:443") {
		t.Errorf("the held connections are not first:\n%s", scr)
	}
	s.Keys("o")
	s.WaitFor(wait, "allowed h.test:443 once: that connection goes through", `> HELD evil\x1b[2J.test:80`)
	if got := readDecided(); got != user+" 0123456789abcdef once\n" {
		t.Errorf("after o: %q", got)
	}
	s.Keys("d")
	s.WaitFor(wait, `refused evil\x1b[2J.test:80: the agent reads that you were asked`, "> b.test:443")
	if got := readDecided(); got != user+" 0123456789abcdef once\n"+user+" fedcba9876543210 deny\n" {
		t.Errorf("after d: %q", got)
	}
	s.Keys("o")
	s.WaitFor(wait, "o allows a held connection or request once; b.test:443 was refused already")
	// The guest drops the decided ones; a new one is held.
	writeRecordHeld(t, f, writer, []netpolicy.HeldConn{{ID: "00000000000000ff", Host: "n.test", Port: 443, Since: t0, SecondsLeft: 60}}, blockedEntry(t0, "b.test", 443))
	scr = s.WaitFor(wait, "HELD n.test:443")
	if strings.Contains(scr, "HELD h.test") || strings.Contains(scr, "HELD evil") {
		t.Errorf("decided connections listed again:\n%s", scr)
	}
	s.Keys("q")
	s.WaitFor(wait, "watch done")
}

// watch in a real terminal with requests the session's relay refused under the rules (from
// the session's log of uses on the host): listed beside the guest's refusals as the rule for
// exactly that request, via the relay; a allows that rule for the session; a request whose
// method the agent made "PUT+POST" (a rule would read two methods) is refused with how to
// allow it by hand, escaped, and the policy is unchanged.
func TestWatchTUIRelayRequests(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	setStoredNetwork(t, f, "allow:github.com:ro")
	writer := guesttest.Connect(t, f.Srv, guest.Options{NoLoginShell: true})
	t0 := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	refused := blockedEntry(t0, "b.test", 443)
	refused.Command = "curl -sS https://b.test/\x1b[2J"
	writeRecord(t, f, writer, refused)
	uses := &secrets.FileLog{Dir: f.Store.SessionDir(staging.SessionID(f.Workdir))}
	if err := os.MkdirAll(uses.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, u := range []secrets.Use{
		{Time: t0.Add(time.Second), Host: "github.com:443", Method: "GET", Path: "/o/r.git/info/refs", Rules: true},
		{Time: t0.Add(2 * time.Second), Host: "github.com:443", Method: "PUT+POST", Path: "/x\x1b[2J", Rules: true, Refused: true},
		{Time: t0.Add(3 * time.Second), Host: "github.com:443", Method: "POST", Path: "/o/r.git/git-receive-pack", Rules: true, Refused: true},
	} {
		uses.Record(u)
	}

	s := startWatchTUI(t, f, config, 160)
	const wait = time.Minute
	stored := func() string {
		t.Helper()
		st, _, err := f.Store.Load(f.Workdir)
		if err != nil {
			t.Fatal(err)
		}
		return staging.NetworkOf(st)
	}

	scr := s.WaitFor(wait, "> github.com:443/o/r.git/git-receive-pack:POST", "via relay", `  github.com:443/x\x1b[2J:PUT+POST`, "  b.test:443",
		`via proxy  by curl -sS https://b.test/\x1b[2J`)
	if strings.Contains(scr, "info/refs") {
		t.Errorf("an allowed request is listed:\n%s", scr)
	}
	s.Keys("a")
	s.WaitFor(wait, "policy: allow:github.com:ro,github.com:443/o/r.git/git-receive-pack:POST", `> github.com:443/x\x1b[2J:PUT+POST`)
	if got := stored(); got != "allow:github.com:ro,github.com:443/o/r.git/git-receive-pack:POST" {
		t.Errorf("the session's policy after a: %q", got)
	}
	s.Keys("a")
	s.WaitFor(wait, `refused: github.com:443/x\x1b[2J:PUT+POST: the method "PUT+POST" is not one method`, "allow it by hand")
	if got := stored(); got != "allow:github.com:ro,github.com:443/o/r.git/git-receive-pack:POST" {
		t.Errorf("the session's policy after a refused allow: %q", got)
	}
	s.Keys("q")
	s.WaitFor(wait, "watch done")
}

// startWatchTUI runs the watch helper (watchHelper: the real command) on a width×30 tmux pane,
// reading f's record from its sshd, with config as XDG_CONFIG_HOME and extra environment.
func startWatchTUI(t *testing.T, f *sessiontest.Fixture, config string, width int, extra ...string) *tmuxtest.Session {
	t.Helper()
	env := []string{
		watchHelperEnv + "=1", "TERM=xterm-256color", "COLORTERM=", "NO_COLOR=", "XDG_CONFIG_HOME=" + config,
		"LMCP_W_ADDR=" + f.Srv.Addr, "LMCP_W_USER=" + f.Srv.User, "LMCP_W_KEY=" + f.Srv.ClientKeyPath,
		"LMCP_W_HOSTKEY=" + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(f.Srv.HostKey))),
		"LMCP_W_WORKDIR=" + f.Workdir, "LMCP_W_STORE=" + f.Store.Dir, "LMCP_W_RECORD=" + recordPath(f),
	}
	args := append([]string{"env", "-u", "CI"}, append(env, extra...)...)
	args = append(args, "timeout", "--foreground", "120", os.Args[0], "-test.run=^$")
	return tmuxtest.Start(t, width, 30, tmuxtest.Quote(args...)+"; sleep 30")
}
