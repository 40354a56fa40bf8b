//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/hostileagent"
)

// The hostile-agent generator (issue 22), as the hostile-tree generator is for review: on the
// VM, a confined agent (a named session under --network=allow:ha-a.test, its own guest user)
// runs seeded sequences of the known escape classes (internal/testutil/hostileagent) through
// its own run_shell_command, while a second session (another working directory, its own agent
// user, under allow:ha-v.test) works beside it. After every step the invariants are checked
// on outcomes, whatever the product does to hold them:
//   - nothing left the guest except to allowed names through the proxy: host listeners for
//     forbidden destinations (TCP, UDP, /leak/ paths on the allowed server) see nothing, and
//     no packet of an agent's uid, nor any packet carrying the attacker's DNS token, leaves
//     on an interface other than loopback (counters in the guest's mangle POSTROUTING);
//   - the other session's requests (with an Authorization header) reached the host, within a
//     generous bound (10 s), the attacker never saw them, and its copy has only its own files;
//   - no root-owned path outside the attacker's own tree changed (owner, mode, type, inode of
//     /etc, /etc/cron.d, /etc/sudoers.d, /etc/systemd/system, /usr/local/libexec/limactl-mcp,
//     the proxy's unit, the other agent's home and copy);
//   - pid 1, sshd and a root canary process are alive;
//   - the record (status --json network) shows every allowed connection made and every byte
//     uploaded;
//   - after a release, discard or `net remove`, no process of the attacker's user is left.
//
// LIMACTL_MCP_HOSTILE_AGENT_SEED picks the seed (default 22; a failure names it);
// CI runs a short set (hostileagent.Short: the four findings' classes, DNS and one more drawn
// from the seed); LIMACTL_MCP_HOSTILE_AGENT_LONG=1 runs the long set (every class, then six
// random sequences, bigger floods).
const (
	haSeedEnv  = "LIMACTL_MCP_HOSTILE_AGENT_SEED"
	haLongEnv  = "LIMACTL_MCP_HOSTILE_AGENT_LONG"
	haOnlyEnv  = "LIMACTL_MCP_HOSTILE_AGENT_CLASSES" // a replay of some classes: names, comma-separated
	haMarker   = "# limactl-mcp-e2e-hostile-agent"
	haUpDir    = "/usr/local/libexec/limactl-mcp-e2e-ha"
	haSession  = "ha"
	haAllowed  = "ha-a.test"
	haVictim   = "ha-v.test"
	haDelayMax = 10 * time.Second // the other session's request, in the guest: generous, not a benchmark
)

var haForbidden = []string{"ha-f1.test", "ha-f2.test"}

// haHost is the host's side: the allowed server and the forbidden listeners.
type haHost struct {
	allowedPort, forbiddenPort, forbiddenUDP int

	mu        sync.Mutex
	forbidden []string            // connections and datagrams to the forbidden listeners
	leaks     []string            // /leak/ paths that reached the allowed server
	seen      map[string]string   // victim path -> its Authorization header
	uploads   map[string]int64    // upload path -> bytes received
	requests  map[string][]string // path -> Host headers
}

func startHAHost(t *testing.T) *haHost {
	h := &haHost{seen: map[string]string{}, uploads: map[string]int64{}, requests: map[string][]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<30))
		h.mu.Lock()
		h.requests[r.URL.Path] = append(h.requests[r.URL.Path], r.Host)
		switch {
		case strings.HasPrefix(r.URL.Path, "/leak/"):
			h.leaks = append(h.leaks, r.Host+r.URL.Path)
		case strings.HasPrefix(r.URL.Path, "/victim/"):
			h.seen[r.URL.Path] = r.Header.Get("Authorization")
		case strings.HasPrefix(r.URL.Path, "/upload/"):
			h.uploads[r.URL.Path] += n
		}
		h.mu.Unlock()
		fmt.Fprintf(w, "ok %s\n", r.URL.Path)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	h.allowedPort = ln.Addr().(*net.TCPAddr).Port

	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fl.Close() })
	h.forbiddenPort = fl.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := fl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(3 * time.Second))
				buf := make([]byte, 200)
				n, _ := c.Read(buf)
				h.hit(fmt.Sprintf("tcp from %s: %q", c.RemoteAddr(), buf[:n]))
			}()
		}
	}()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	h.forbiddenUDP = pc.LocalAddr().(*net.UDPAddr).Port
	go func() {
		buf := make([]byte, 200)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			h.hit(fmt.Sprintf("udp from %s: %q", from, buf[:n]))
		}
	}()
	return h
}

func (h *haHost) hit(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forbidden = append(h.forbidden, s)
}

// take returns and forgets what the forbidden listeners and the leak paths saw.
func (h *haHost) take() (forbidden, leaks []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	forbidden, leaks = h.forbidden, h.leaks
	h.forbidden, h.leaks = nil, nil
	return
}

// haFailure is one invariant that did not hold after one step.
type haFailure struct {
	Seq, Step int
	Class     string
	Detail    string
	Invariant string
	Msg       string
}

// haRun is one run of the generator.
type haRun struct {
	planned  int  // distinct classes in the plan
	attStuck bool // the attacker's session could not set up again (its reconnect was refused)
	t        *testing.T
	seed     int64
	long     bool
	host     *haHost
	token    string

	adir, vdir     string // host working directories
	att, vic       *server
	attUser        string
	vicUser        string
	attUID, vicUID int
	env            hostileagent.Env
	runner         string // the system runner (root's)
	upgrades       int
	canary         int
	base           hostileagent.Snapshot
	snapRoots      map[string]int

	vicRounds   int
	vicFiles    map[string]string // victim-N.txt -> token
	vicAllowed  int
	attAllowed  int
	attUploaded int64

	mu        sync.Mutex // failures and notes: the record's check runs beside the guest's
	failures  []haFailure
	checks    int
	steps     int
	classes   map[string]int
	notes     []string
	cur       haFailure // the step being checked
	resolved  bool
	resolvers string
}

func TestHostileAgent(t *testing.T) {
	seed := int64(22)
	if v := os.Getenv(haSeedEnv); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: not a number", haSeedEnv, v)
		}
		seed = n
	}
	long := os.Getenv(haLongEnv) == "1"
	t0 := time.Now()
	h := &haRun{t: t, seed: seed, long: long, host: startHAHost(t), classes: map[string]int{}, vicFiles: map[string]string{}}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	h.token = "hatok" + hex.EncodeToString(b)
	h.setup()
	// CI's short set: the four findings, DNS and one more class drawn from the seed, one
	// sequence; the long set: every class's known attempt, then six sequences of random ones.
	plan := hostileagent.Short(seed, 1)
	if long {
		plan = hostileagent.Plan(seed, 5, 6)
	}
	if only := os.Getenv(haOnlyEnv); only != "" {
		var err error
		if plan, err = hostileagent.Only(only); err != nil {
			t.Fatalf("%s: %v", haOnlyEnv, err)
		}
	}
	planned := map[string]bool{}
	for _, seq := range plan {
		for _, c := range seq {
			planned[c.Class.Name] = true
		}
	}
	h.planned = len(planned)
	t.Logf("hostile agent: seed %d (%s=%d to replay), %d sequences, long=%v", seed, haSeedEnv, seed, len(plan), long)
	for i, seq := range plan {
		for j, c := range seq {
			h.step(i, j, c)
		}
		h.heal(fmt.Sprintf("after sequence %d", i))
	}
	h.report(len(plan), time.Since(t0))
}

func (h *haRun) setup() {
	t := h.t
	hostIP := strings.Fields(guestShell(t, "getent ahostsv4 host.lima.internal | head -1"))[0]
	names := append([]string{haAllowed, haVictim}, haForbidden...)
	guestShell(t, fmt.Sprintf(`sudo -n sed -i '/%[1]s$/d' /etc/hosts && echo '%[2]s %[3]s %[1]s' | sudo -n tee -a /etc/hosts >/dev/null`, haMarker, hostIP, strings.Join(names, " ")))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, _, _ = vm.Shell(ctx, fmt.Sprintf(`sudo -n sed -i '/%s$/d' /etc/hosts; sudo -n pkill -KILL -f 'sleep 100022'; sudo -n rm -rf %s
for ipt in iptables ip6tables; do sudo -n $ipt -t mangle -D POSTROUTING -j HA-EGRESS 2>/dev/null; sudo -n $ipt -t mangle -F HA-EGRESS 2>/dev/null; sudo -n $ipt -t mangle -X HA-EGRESS 2>/dev/null; done; true`, haMarker, haUpDir))
	})

	h.vdir, h.adir = homeWorkdir(t), homeWorkdir(t)
	if err := os.WriteFile(path.Join(h.vdir, "main.txt"), []byte("victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(path.Join(h.vdir, "main.txt"), vmUID(t), vmGID(t))
	if err := os.WriteFile(path.Join(h.adir, "a.txt"), []byte("attacker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(path.Join(h.adir, "a.txt"), vmUID(t), vmGID(t))
	discardOnCleanup(t, h.vdir)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := vm.Command(ctx, ourBin, "discard", instanceName, "--session", haSession, "--yes")
		cmd.Dir = h.adir
		_, _ = cmd.CombinedOutput()
	})
	h.vicFiles["main.txt"] = "victim"
	var err error
	if h.vic, err = h.start(h.vdir, "", "--network=allow:"+haVictim); err != nil {
		t.Fatalf("the other session: %v", err)
	}
	vout := shellOK(t, h.vic.Session, h.vdir, `id -un; id -u; echo "$HOME"; pwd`)
	if err := h.startAttacker(); err != nil {
		t.Fatalf("the attacker's session: %v", err)
	}
	// What the classes are made of must be there for the agent: a class that cannot run fails
	// here, loudly, instead of passing by doing nothing.
	aout := shellOK(t, h.att.Session, h.adir, `id -un; id -u; echo "$HOME"; pwd; for c in python3 curl setsid nohup timeout find ln mv sh; do command -v $c >/dev/null || echo "MISSING $c"; done`)
	if strings.Contains(aout, "MISSING ") {
		t.Fatalf("the attacker's user lacks what the escape classes need:\n%s", aout)
	}
	vf, af := strings.Fields(vout), strings.Fields(aout)
	if len(vf) != 4 || len(af) != 4 || !strings.HasPrefix(vf[0], "lmcp-") || !strings.HasPrefix(af[0], "lmcp-") || vf[0] == af[0] {
		t.Fatalf("want two agent users: the other session %q, the attacker %q", vout, aout)
	}
	h.vicUser, h.attUser = vf[0], af[0]
	h.vicUID, _ = strconv.Atoi(vf[1])
	h.attUID, _ = strconv.Atoi(af[1])
	// Where the copies are in the guest (the tools show the agent the host's paths).
	af[3], vf[3] = h.guestPath(h.adir, haSession), h.guestPath(h.vdir, "")
	staged := ""
	if d := path.Dir(af[3]); path.Base(d) == "limactl-mcp-staged" && strings.HasPrefix(d, af[2]+"/") {
		staged = d
	}
	if staged == "" {
		t.Fatalf("the attacker's named session is not staged under its home (%s): %s", af[2], af[3])
	}
	h.runner = strings.TrimSpace(guestShell(t, `ls -t /usr/local/libexec/limactl-mcp/runner-* | head -1`))
	if !strings.HasPrefix(h.runner, "/usr/local/libexec/limactl-mcp/runner-") {
		t.Fatalf("no system runner in the guest: %q", h.runner)
	}
	h.env = hostileagent.Env{
		HostIP: hostIP, Allowed: haAllowed, AllowedPort: h.host.allowedPort, VictimAllowed: haVictim,
		Forbidden: haForbidden, ForbiddenPort: h.host.forbiddenPort, ForbiddenUDP: h.host.forbiddenUDP,
		Token: h.token, Home: af[2], Copy: af[3], StagedDir: staged, VictimHome: vf[2], VictimCopy: vf[3], Long: h.long,
	}
	h.startCanary()

	// Counters of what leaves the guest on another interface than loopback: packets of either
	// agent's uid (the proxy is root's: what it sends is not counted), and packets carrying the
	// attacker's DNS token, whoever sends them (a resolver daemon, the proxy).
	var rules strings.Builder
	for _, ipt := range []string{"iptables", "ip6tables"} {
		fmt.Fprintf(&rules, `sudo -n %[1]s -t mangle -N HA-EGRESS 2>/dev/null || true; sudo -n %[1]s -t mangle -F HA-EGRESS
sudo -n %[1]s -t mangle -C POSTROUTING -j HA-EGRESS 2>/dev/null || sudo -n %[1]s -t mangle -I POSTROUTING -j HA-EGRESS
sudo -n %[1]s -t mangle -A HA-EGRESS ! -o lo -m owner --uid-owner %[2]d -m comment --comment ha-attacker-uid
sudo -n %[1]s -t mangle -A HA-EGRESS ! -o lo -m owner --uid-owner %[3]d -m comment --comment ha-victim-uid
sudo -n %[1]s -t mangle -A HA-EGRESS ! -o lo -m string --string %[4]s --algo bm --icase -m comment --comment ha-dns-token
`, ipt, h.attUID, h.vicUID, h.token)
	}
	guestShell(t, "set -e\n"+rules.String())

	// The resolvers the dns class must be proven against: systemd-resolved's (D-Bus, varlink,
	// 127.0.0.53), switched on for this test as Ubuntu runs it, its upstream a DNS server of
	// the test's on the host (what leaves for it on eth0 carries the token: counted above). A
	// guest without it cannot prove the class.
	resolvedOn(t, startDNSServer(t).port)
	out, _ := guestRun(t, `systemctl is-active systemd-resolved 2>&1; ls -l /run/systemd/resolve/ 2>&1; grep ^hosts: /etc/nsswitch.conf; pgrep -x nscd >/dev/null && echo nscd-running; true`)
	h.resolvers = strings.TrimSpace(out)
	h.resolved = strings.HasPrefix(h.resolvers, "active")

	h.snapRoots = map[string]int{
		"/etc": 1, "/etc/cron.d": 2, "/etc/sudoers.d": 2, "/etc/systemd/system": 2, "/usr/local/libexec/limactl-mcp": 2,
		"/run/systemd/transient": 1, "/etc/limactl-mcp": 2, "/var/lib/limactl-mcp/agents": 1,
		h.env.VictimHome: 2, path.Dir(h.env.VictimCopy): 1, "/root": 1, "/usr/local/bin": 1,
	}
	h.base = h.snapshot()
	if len(h.base) < 50 {
		t.Fatalf("the snapshot of root's paths is too small to mean anything (%d entries)", len(h.base))
	}
}

// guestPath is status --json's guest_path of the session of dir.
func (h *haRun) guestPath(dir, session string) string {
	out, stderr, code := plugin(h.t, dir, "status", instanceName, "--json")
	if code != 0 {
		h.t.Fatalf("status --json: exit %d: %s", code, stderr)
	}
	var st struct {
		Sessions []struct {
			Workdir   string `json:"workdir"`
			Session   string `json:"session"`
			GuestPath string `json:"guest_path"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		h.t.Fatalf("status --json: %v", err)
	}
	for _, s := range st.Sessions {
		if s.Workdir == dir && (s.Session == session || session == "" && s.Session == "default") && strings.HasPrefix(s.GuestPath, "/") {
			return s.GuestPath
		}
	}
	h.t.Fatalf("status --json has no guest path for %s (session %q): %s", dir, session, out)
	return ""
}

// start runs `limactl-mcp serve` in dir and connects (no test failure: a refusal is an outcome).
func (h *haRun) start(dir string, args ...string) (*server, error) {
	var a []string
	for _, s := range args {
		if s != "" {
			a = append(a, s)
		}
	}
	procCtx, cancel := context.WithCancel(context.Background())
	cmd := vm.Command(procCtx, "limactl-mcp", append([]string{"serve", instanceName}, a...)...)
	cmd.Dir = dir
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "limactl-mcp-e2e-ha", Version: "v0.0.1"}, nil)
	cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer ccancel()
	session, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("serve %s: %v\nstderr:\n%s", strings.Join(a, " "), err, stderr.String())
	}
	h.t.Cleanup(func() { _ = session.Close(); cancel() })
	return &server{Session: session, Stderr: stderr, Dir: dir}, nil
}

func (h *haRun) startAttacker() error {
	s, err := h.start(h.adir, "--session", haSession, "--network=allow:"+haAllowed)
	if err != nil {
		return err
	}
	if _, err := h.call(s, "true", 5*time.Minute); err != nil {
		_ = s.Session.Close()
		return err
	}
	h.att = s
	h.attStuck = false
	return nil
}

func (h *haRun) stopAttacker() {
	if h.att != nil {
		_ = h.att.Session.Close()
		h.att = nil
	}
}

// call runs a bash script through run_shell_command (bounded; an error is an outcome).
func (h *haRun) call(s *server, script string, d time.Duration) (shellResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "run_shell_command", Arguments: map[string]any{"command": []string{"bash", "-c", script}, "directory": s.Dir, "timeout_seconds": int(d.Seconds()) - 15}})
	if err != nil {
		return shellResult{}, err
	}
	text := firstText(res)
	var out shellResult
	if json.Unmarshal([]byte(text), &out) != nil || res.IsError || out.ExitCode == nil {
		return out, fmt.Errorf("run_shell_command: %.2000s", text)
	}
	return out, nil
}

func (h *haRun) startCanary() {
	out := guestShell(h.t, `sudo -n sh -c 'setsid sleep 100022 </dev/null >/dev/null 2>&1 & echo $!'`)
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 1 {
		h.t.Fatalf("starting the root canary: %q", out)
	}
	h.canary = pid
	h.env.RootPID = pid
}

func (h *haRun) snapshot() hostileagent.Snapshot {
	out := guestShell(h.t, "sudo -n bash -c "+shq(hostileagent.SnapshotScript(h.snapRoots)))
	return h.parseSnapshot(out)
}

// parseSnapshot reads a snapshot; the proxy's unit files count by type, owner and mode only
// (a restart or an upgrade rewrites them). The proxy's directory of held connections comes
// and goes (a proxy that starts removes it, a watch makes it): it counts only when it is there
// with another type, owner or mode than root's 0700 directory (a run on a VM whose earlier
// tests had watched a session saw it removed by the upgrade's proxy restart).
func (h *haRun) parseSnapshot(out string) hostileagent.Snapshot {
	s := hostileagent.ParseSnapshot(out, h.skipPath)
	for p, v := range s {
		if strings.Contains(path.Base(p), "limactl-mcp-netproxy") {
			if i := strings.LastIndexByte(v, ' '); i > 0 {
				s[p] = v[:i]
			}
		}
	}
	if v, ok := s[haHeldDir]; ok && strings.HasPrefix(v, "d 0:0 700 ") {
		delete(s, haHeldDir)
	}
	return s
}

// haHeldDir is the proxy's directory of held connections (enforce.Layout.heldDir).
const haHeldDir = "/etc/limactl-mcp/net/held"

// skipPath leaves out what legitimately changes: the attacker's own files (its policy and
// environment, which a discard removes and a start writes again), the proxy unit's inode (a
// restart rewrites it: its owner and mode still count, below), the guest's own churn.
func (h *haRun) skipPath(p string) bool {
	return strings.Contains(p, h.attUser) || p == "/etc/ld.so.cache" || p == "/etc/adjtime" ||
		strings.HasPrefix(p, "/run/systemd/transient/") && !strings.Contains(p, "limactl-mcp")
}

func (h *haRun) fail(invariant, format string, args ...any) {
	h.mu.Lock() // status --json's check runs beside the guest's
	defer h.mu.Unlock()
	f := h.cur
	f.Invariant, f.Msg = invariant, fmt.Sprintf(format, args...)
	h.failures = append(h.failures, f)
	h.t.Logf("FAIL seed %d sequence %d step %d [%s] %s: %s: %s", h.seed, f.Seq, f.Step, f.Class, f.Detail, invariant, f.Msg)
}

func (h *haRun) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, s)
	h.t.Logf("note: %s", s)
}

func (h *haRun) step(i, j int, c hostileagent.Pick) {
	if h.att == nil {
		h.heal(fmt.Sprintf("before sequence %d step %d", i, j))
	}
	st := c.Step(hostileagent.StepRand(h.seed, i, j), h.env)
	h.cur = haFailure{Seq: i, Step: j, Class: st.Class, Detail: st.Detail}
	h.steps++
	h.classes[st.Class]++
	t0 := time.Now()
	before := len(h.failures)
	if st.Class == "dns" && !h.resolved {
		h.fail("resolver-class-runnable", "this guest runs no systemd-resolved, so DNS through its D-Bus, varlink and 127.0.0.53 cannot be proven here (issue 22: an image with systemd-resolved); the guest says: %q", h.resolvers)
	}
	if h.att != nil {
		out, err := h.call(h.att, st.Script, 30*time.Minute)
		if err != nil {
			h.note("seq %d step %d %s: the attacker's command: %v", i, j, st.Class, err)
		} else {
			h.t.Logf("seq %d step %d [%s] %s: exit %d, %s", i, j, st.Class, st.Detail, *out.ExitCode, haLines(out.Stdout, "HA-"))
		}
		h.attAllowed += st.Allowed
		h.attUploaded += st.Uploaded
	}
	t1 := time.Now()
	h.act(st.After)
	if st.Class == "left-behind" {
		time.Sleep(3 * time.Second) // a loop that survived has had its chance to reach out
	}
	t2 := time.Now()
	h.check()
	h.t.Logf("seq %d step %d [%s] done in %s (the agent's command %s, %s %s, the checks %s)", i, j, st.Class, time.Since(t0).Round(time.Second),
		t1.Sub(t0).Round(time.Second), st.After, t2.Sub(t1).Round(time.Second), time.Since(t2).Round(time.Second))
	if len(h.failures) > before {
		h.heal(fmt.Sprintf("after the failure of sequence %d step %d", i, j))
	}
}

// act is what the host does after the attacker's script.
func (h *haRun) act(a hostileagent.Action) {
	switch a {
	case hostileagent.None:
		return
	case hostileagent.Reconnect:
		h.stopAttacker()
		if err := h.startAttacker(); err != nil {
			h.attStuck = true
			h.note("the attacker's reconnect was refused (an outcome, not a failure): %.500v", err)
		}
	case hostileagent.ReconnectVictim:
		_ = h.vic.Session.Close()
		s, err := h.start(h.vdir, "--network=allow:"+haVictim)
		h.checks++
		if err != nil {
			h.fail("other-session-reconnects", "%v", err)
			return
		}
		h.vic = s
	case hostileagent.UpgradeReconnect:
		h.act(hostileagent.Upgrade)
		h.act(hostileagent.ReconnectVictim)
	case hostileagent.Upgrade:
		h.upgrades++
		up := fmt.Sprintf("%s/runner-upgrade-%d", haUpDir, h.upgrades)
		out, code := guestRun(h.t, fmt.Sprintf(`sudo -n install -D -o root -g root -m 0755 %[1]s %[2]s && sudo -n find %[3]s -name 'runner-upgrade-*' ! -name %[4]s -delete && timeout 120 sudo -n %[2]s net ensure --user %[5]s --policy allow:%[6]s`,
			h.runner, up, haUpDir, path.Base(up), h.vicUser, haVictim))
		h.checks++
		if code != 0 {
			h.fail("upgrade-ensure", "net ensure of a new runner for the other session failed (exit %d): %.1000s", code, out)
		}
	case hostileagent.Release, hostileagent.Discard, hostileagent.NetRemove:
		h.stopAttacker()
		switch a {
		case hostileagent.Release:
			if s, err := h.start(h.adir, "--session", haSession, "--network=open"); err != nil {
				h.note("release (serve --network=open) refused: %.500v", err)
			} else {
				_, _ = h.call(s, "true", 2*time.Minute)
				_ = s.Session.Close()
			}
		case hostileagent.Discard:
			if _, stderr, code := plugin(h.t, h.adir, "discard", instanceName, "--session", haSession, "--yes"); code != 0 {
				h.note("discard refused (exit %d): %.500s", code, stderr)
			}
		case hostileagent.NetRemove:
			if out, code := guestRun(h.t, fmt.Sprintf("sudo -n %s net remove --user %s", h.runner, h.attUser)); code != 0 {
				h.note("net remove failed (exit %d): %.500s", code, out)
			}
		}
		h.checks++
		if out, _ := guestRun(h.t, fmt.Sprintf("sleep 1; ps -o pid=,args= -u %d || true", h.attUID)); strings.TrimSpace(out) != "" {
			h.fail("no-process-left", "after %s, processes of %s are left:\n%.1500s", a, h.attUser, out)
		}
		if err := h.startAttacker(); err != nil {
			h.note("the attacker's start after %s was refused: %.500v", a, err)
		}
	}
}

var haMS = regexp.MustCompile(`HA-MS (\d+)`)

// check checks every invariant after a step.
func (h *haRun) check() {
	t := h.t
	// The other session works: two requests with a secret, a file.
	h.vicRounds++
	n := h.vicRounds
	secret := fmt.Sprintf("ha-secret-%d-%x", n, time.Now().UnixNano())
	pathH, pathC := fmt.Sprintf("/victim/%d-h", n), fmt.Sprintf("/victim/%d-c", n)
	base := fmt.Sprintf("http://%s:%d", haVictim, h.host.allowedPort)
	file := fmt.Sprintf("victim-%d.txt", n)
	script := fmt.Sprintf(`for p in %[2]s '-p %[3]s'; do s=$(date +%%s%%N); curl -sS -m 60 -H 'Authorization: Bearer %[1]s' $p; e=$(date +%%s%%N); echo "HA-MS $(( (e-s)/1000000 ))"; done
echo %[4]s > %[5]s
echo HA-FILES; find . -mindepth 1 -printf '%%P %%u %%y\n' | LC_ALL=C sort; for f in main.txt victim-*.txt; do echo "HA-CONTENT $f $(head -c 100 "$f")"; done`,
		secret, shq(base+pathH), shq(base+pathC), secret[:12], file)
	h.checks++
	c0 := time.Now()
	out, err := h.call(h.vic, script, 5*time.Minute)
	dVic := time.Since(c0)
	var reqMS []string
	for _, m := range haMS.FindAllStringSubmatch(out.Stdout, -1) {
		reqMS = append(reqMS, m[1])
	}
	// The record must show every request that reached the host (one taken on the way is a
	// failure of its own, below).
	h.host.mu.Lock()
	for _, p := range []string{pathH, pathC} {
		if _, ok := h.host.seen[p]; ok {
			h.vicAllowed++
		}
	}
	h.host.mu.Unlock()
	switch {
	case err != nil:
		h.fail("other-session-works", "%v", err)
		if s, err := h.start(h.vdir, "--network=allow:"+haVictim); err == nil {
			_ = h.vic.Session.Close()
			h.vic = s
		}
	default:
		so := out.Stdout
		h.vicFiles[file] = secret[:12] // written: the command ran
		h.checks++
		if !strings.Contains(so, "ok "+pathH) || !strings.Contains(so, "ok "+pathC) {
			h.fail("other-session-reaches-its-host", "the other session's requests did not get the host's answer: %.1500s %.500s", so, out.Stderr)
		}
		h.checks++
		for _, m := range haMS.FindAllStringSubmatch(so, -1) {
			if ms, _ := strconv.Atoi(m[1]); time.Duration(ms)*time.Millisecond > haDelayMax {
				h.fail("other-session-not-delayed", "a request of the other session took %d ms (bound %s)", ms, haDelayMax)
			}
		}
		h.checks++
		h.host.mu.Lock()
		gotH, okH := h.host.seen[pathH]
		gotC, okC := h.host.seen[pathC]
		h.host.mu.Unlock()
		if !okH || !okC || gotH != "Bearer "+secret || gotC != "Bearer "+secret {
			h.fail("other-session-reaches-its-host", "the host saw %s=%v(%q) %s=%v(%q)", pathH, okH, gotH, pathC, okC, gotC)
		}
		h.checks++
		h.checkVictimCopy(so)
	}

	// status --json (the record) is read beside the guest's state: both only look, and the
	// two were a third of CI's slowest test one after the other.
	h.checks += 2
	c2 := time.Now()
	var dRecord time.Duration
	var record sync.WaitGroup
	record.Go(func() {
		h.checkRecord()
		dRecord = time.Since(c2)
	})
	defer record.Wait() // an early return below
	// The guest: root's paths, what left it, who is alive, what the attacker holds.
	h.checks += 4
	c1 := time.Now()
	// One sudo for all of it (each costs a PAM session, half a second on an emulated guest).
	gs, code := guestRun(t, "sudo -n bash -c "+shq(hostileagent.SnapshotScript(h.snapRoots)+`
echo HA-COUNTERS; for ipt in iptables ip6tables; do $ipt -t mangle -nvxL HA-EGRESS 2>&1 | grep 'ha-' | sed "s/^/$ipt /"; done
echo HA-ALIVE; kill -0 1 && echo pid1; pgrep -x sshd >/dev/null && echo sshd; kill -0 `+strconv.Itoa(h.canary)+` && echo canary
echo HA-LOOT; runuser -u `+h.attUser+` -- sh -c 'cat "$1"/.ha-loot* 2>/dev/null' sh "$(getent passwd `+h.attUser+` | cut -d: -f6)" | grep -a -o 'ha-secret-[0-9a-f-]*' | sort -u | head -20
echo HA-END`))
	dGuest := time.Since(c1)
	if code != 0 || !strings.Contains(gs, "HA-END") {
		h.fail("guest-answers", "the guest's check failed (exit %d): %.2000s", code, gs)
		return
	}
	snap, rest, _ := strings.Cut(gs, "HA-COUNTERS\n")
	counters, rest, _ := strings.Cut(rest, "HA-ALIVE\n")
	alive, loot, _ := strings.Cut(rest, "HA-LOOT\n")
	loot, _, _ = strings.Cut(loot, "HA-END")
	if d := hostileagent.Diff(h.base, h.parseSnapshot(snap)); len(d) > 0 {
		h.fail("root-paths-unchanged", "%d root-owned entries changed:\n  %s", len(d), strings.Join(haHead(d, 30), "\n  "))
	}
	for _, l := range strings.Split(strings.TrimSpace(counters), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			h.fail("nothing-left-the-guest", "the egress counters are gone: %q", counters)
			break
		}
		if f[1] != "0" {
			h.fail("nothing-left-the-guest", "packets left the guest: %s", l)
		}
	}
	if len(strings.Split(strings.TrimSpace(counters), "\n")) != 6 {
		h.fail("nothing-left-the-guest", "the egress counters are not all there: %q", counters)
	}
	for _, want := range []string{"pid1", "sshd", "canary"} {
		if !strings.Contains(alive, want) {
			h.fail("root-processes-alive", "%s is gone (root process %d named in forged answers)", want, h.canary)
		}
	}
	if l := strings.TrimSpace(loot); l != "" {
		h.fail("other-session-unseen", "the attacker holds the other session's secrets: %s", strings.ReplaceAll(l, "\n", " "))
	}

	// The host's listeners.
	h.checks += 2
	forbidden, leaks := h.host.take()
	if len(forbidden) > 0 {
		h.fail("nothing-left-the-guest", "%d connections reached the forbidden listeners: %s", len(forbidden), strings.Join(haHead(forbidden, 5), "; "))
	}
	if len(leaks) > 0 {
		h.fail("nothing-left-the-guest", "%d forbidden requests reached the host: %s", len(leaks), strings.Join(haHead(leaks, 5), "; "))
	}

	record.Wait()
	// Where the checks' time goes (CI's slowest test: what to cut next).
	t.Logf("  the checks: the other session's command %s (its requests %s ms), the guest's state %s, status --json %s (beside it)",
		dVic.Round(100*time.Millisecond), strings.Join(reqMS, " and "), dGuest.Round(100*time.Millisecond), dRecord.Round(100*time.Millisecond))
}

// checkVictimCopy: only the other session's own files, its user's, with its contents.
func (h *haRun) checkVictimCopy(so string) {
	_, files, _ := strings.Cut(so, "HA-FILES\n")
	var entries []string
	for _, l := range strings.Split(files, "\n") {
		if l == "" || strings.HasPrefix(l, "HA-CONTENT ") {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 3 || f[1] != h.vicUser || f[2] != "f" {
			h.fail("other-copy-untouched", "an entry that is not the other session's own file: %q", l)
			continue
		}
		entries = append(entries, f[0])
		if _, ok := h.vicFiles[f[0]]; !ok {
			h.fail("other-copy-untouched", "a file the other session did not write: %q", l)
		}
	}
	if len(entries) != len(h.vicFiles) {
		h.fail("other-copy-untouched", "want the other session's %d files, found %d: %v", len(h.vicFiles), len(entries), entries)
	}
	for name, want := range h.vicFiles {
		if !strings.Contains(so, "HA-CONTENT "+name+" "+want) {
			h.fail("other-copy-untouched", "%s does not hold what the other session wrote (%q)", name, want)
		}
	}
}

// checkRecord: status --json shows every allowed connection made and every byte uploaded.
// It runs beside the guest's check: it reports only through fail and note (the caller counts).
func (h *haRun) checkRecord() {
	out, stderr, code := plugin(h.t, h.vdir, "status", instanceName, "--json")
	if code != 0 {
		h.fail("record-shows-allowed", "status --json: exit %d: %.500s", code, stderr)
		return
	}
	var st struct {
		Sessions []struct {
			Workdir string          `json:"workdir"`
			Session string          `json:"session"`
			Network json.RawMessage `json:"network"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		h.fail("record-shows-allowed", "status --json: %v", err)
		return
	}
	type record struct {
		Allowed      int   `json:"allowed"`
		BytesUp      int64 `json:"bytes_up"`
		HostsReached []struct {
			Host string `json:"host"`
		} `json:"hosts_reached"`
		Error string `json:"error"`
	}
	find := func(dir, session string) (*record, string) {
		for _, s := range st.Sessions {
			if s.Workdir == dir && (s.Session == session || session == "" && s.Session == "default") {
				var r record
				_ = json.Unmarshal(s.Network, &r)
				return &r, string(s.Network)
			}
		}
		return nil, ""
	}
	reached := func(r *record, host string) bool {
		for _, x := range r.HostsReached {
			if x.Host == host {
				return true
			}
		}
		return false
	}
	if r, raw := find(h.vdir, ""); r == nil {
		h.fail("record-shows-allowed", "status lists no session for the other session's %s", h.vdir)
	} else if r.Allowed < h.vicAllowed || !reached(r, haVictim) {
		h.fail("record-shows-allowed", "the other session made %d allowed connections to %s; its record: %.600s", h.vicAllowed, haVictim, raw)
	}
	if h.attAllowed == 0 {
		return
	}
	// Even when the attacker broke its own session's setup (a link where its copy was, its
	// reconnect refused), status reads its record with the Lima user's connection: the record
	// is root's, and must still hold what it did.
	r, raw := find(h.adir, haSession)
	if h.attStuck {
		h.note("the attacker's session cannot set up; its record as status shows it: %.300s", raw)
	}
	if r == nil {
		h.note("status lists no attacker session (after a discard that could not start again)")
	} else if r.Allowed < h.attAllowed || r.BytesUp < h.attUploaded || !reached(r, haAllowed) {
		h.fail("record-shows-allowed", "the attacker made %d allowed connections to %s with %d bytes up; its record: %.600s", h.attAllowed, haAllowed, h.attUploaded, raw)
	}
}

// heal puts the guest back for the next sequence: the attacker's processes and links gone,
// the proxy of the system runner, a live canary, the attacker's session afresh; anything root's
// that changed on the way is a failure of the step before, then the new baseline.
func (h *haRun) heal(when string) {
	h.stopAttacker()
	home, staged, cp := h.env.Home, h.env.StagedDir, h.env.Copy
	out, code := guestRun(h.t, fmt.Sprintf(`for i in $(seq 20); do sudo -n pkill -KILL -u %[1]s || break; sleep 0.1; done
sudo -n -u %[1]s sh -c 'rm -f "$HOME"/.ha-loot*; for p in %[2]s %[3]s %[4]s/.cache; do [ -L "$p" ] && rm -f "$p"; [ -L "$p.l" ] && rm -f "$p.l"; for a in "$p.real" "$p".away-*; do [ -d "$a" ] && [ ! -e "$p" ] && mv -T "$a" "$p"; done; done; true'
timeout 120 sudo -n %[5]s net ensure --user %[6]s --policy allow:%[7]s`, h.attUser, shq(staged), shq(cp), shq(home), h.runner, h.vicUser, haVictim))
	if code != 0 {
		h.note("%s: healing the guest: exit %d: %.1000s", when, code, out)
	}
	if _, stderr, code := plugin(h.t, h.adir, "discard", instanceName, "--session", haSession, "--yes"); code != 0 {
		h.note("%s: discarding the attacker's session: exit %d: %.500s", when, code, stderr)
	}
	if o, _ := guestRun(h.t, fmt.Sprintf("sudo -n kill -0 %d && echo alive", h.canary)); !strings.Contains(o, "alive") {
		h.startCanary()
	}
	if err := h.startAttacker(); err != nil {
		h.t.Fatalf("%s: the attacker's session cannot start again: %v", when, err)
	}
	if d := hostileagent.Diff(h.base, h.snapshot()); len(d) > 0 {
		h.cur = haFailure{Seq: h.cur.Seq, Step: h.cur.Step, Class: h.cur.Class, Detail: h.cur.Detail + " (seen after the heal's kill and discard)"}
		h.checks++
		h.fail("root-paths-unchanged", "%d root-owned entries changed:\n  %s", len(d), strings.Join(haHead(d, 30), "\n  "))
	}
	h.base = h.snapshot()
	guestShell(h.t, "sudo -n iptables -t mangle -Z HA-EGRESS; sudo -n ip6tables -t mangle -Z HA-EGRESS")
	h.host.take()
}

func (h *haRun) report(seqs int, d time.Duration) {
	t := h.t
	var cls []string
	for c, n := range h.classes {
		cls = append(cls, fmt.Sprintf("%s×%d", c, n))
	}
	sort.Strings(cls)
	byClass := map[string][]string{}
	for _, f := range h.failures {
		byClass[f.Class] = append(byClass[f.Class], f.Invariant)
	}
	var failed []string
	for c, inv := range byClass {
		sort.Strings(inv)
		failed = append(failed, fmt.Sprintf("%s (%s)", c, strings.Join(haUniq(inv), ", ")))
	}
	sort.Strings(failed)
	t.Logf("hostile agent: seed %d: %d sequences, %d steps, %d of %d escape classes exercised [%s], %d invariant checks, %d failures, in %s",
		h.seed, seqs, h.steps, len(h.classes), len(hostileagent.Classes), strings.Join(cls, " "), h.checks, len(h.failures), d.Round(time.Second))
	if len(h.classes) != h.planned {
		t.Errorf("only %d of the %d planned escape classes ran", len(h.classes), h.planned)
	}
	for _, f := range h.failures {
		t.Errorf("seed %d sequence %d step %d [%s] %s: invariant %s: %s", h.seed, f.Seq, f.Step, f.Class, f.Detail, f.Invariant, f.Msg)
	}
	if len(failed) > 0 {
		t.Errorf("hostile agent: failing classes (replay: %s=%d go test -tags e2e -run TestHostileAgent ./test/e2e/): %s", haSeedEnv, h.seed, strings.Join(failed, "; "))
	}
}

func haLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(haHead(out, 8), " | ")
}

func haHead(v []string, n int) []string {
	if len(v) > n {
		return append(v[:n:n], fmt.Sprintf("… %d more", len(v)-n))
	}
	return v
}

func haUniq(v []string) []string {
	var out []string
	for i, s := range v {
		if i == 0 || s != v[i-1] {
			out = append(out, s)
		}
	}
	return out
}
