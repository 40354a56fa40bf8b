package enforce

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// proxyFixture is a proxy on real loopback sockets with a policy for a real other user, so
// that /proc/net/tcp tells it who connects (as in the guest).
type proxyFixture struct {
	layout   Layout
	addr     string
	agent    string // the local user the client runs as
	upstream *httptest.Server
	// stopWatch ends the watch of hold_test's watch (nil: none).
	stopWatch func()
}

// startProxyFixture needs root (to run a client as another user) and that user, curl and
// runuser; the policy file names the agent user "lmcp-test" and gives it that user's uid.
func startProxyFixture(t *testing.T, spec string) *proxyFixture {
	t.Helper()
	return startProxyFixtureWith(t, spec, nil)
}

// startProxyFixtureWith is startProxyFixture with setup (when set) called on the proxy before
// it serves.
func startProxyFixtureWith(t *testing.T, spec string, setup func(*Proxy)) *proxyFixture {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the client runs as another user")
	}
	agent := os.Getenv("NETPOLICY_TEST_USER")
	if agent == "" {
		agent = "limatest"
	}
	u, err := user.Lookup(agent)
	if err != nil {
		t.Skipf("no user %s to run the client as (set NETPOLICY_TEST_USER): %v", agent, err)
	}
	for _, tool := range []string{"curl", "runuser"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l := Layout{ConfigDir: filepath.Join(dir, "net"), LogDir: filepath.Join(dir, "log"), HomeBase: dir}
	if err := ensureRootDir(l.ConfigDir); err != nil {
		t.Fatal(err)
	}
	writePolicy(t, l, UserPolicy{User: "lmcp-test", UID: uid, Policy: spec})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.ProxyAddrs = []string{ln.Addr().String()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	proxy := NewProxy(l)
	if setup != nil {
		setup(proxy)
	}
	go func() { done <- proxy.Serve(ctx, []net.Listener{ln}) }()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen-Connection", r.Header.Get("Connection"))
		w.Header().Set("X-Seen-Proxy-Authorization", r.Header.Get("Proxy-Authorization"))
		fmt.Fprintf(w, "hello %s %s body=%d", r.Method, r.URL.RequestURI(), len(body))
	}))
	t.Cleanup(func() {
		cancel()
		<-done
		upstream.Close()
	})
	return &proxyFixture{layout: l, addr: ln.Addr().String(), agent: agent, upstream: upstream}
}

func writePolicy(t *testing.T, l Layout, u UserPolicy) {
	t.Helper()
	data, _ := json.Marshal(u)
	if _, err := writeFileIfChanged(l.policyFile(u.User), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// curlAs runs curl as the agent with the proxy set, and returns its output and exit code.
func (f *proxyFixture) curlAs(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("runuser", append([]string{"-u", f.agent, "--", "curl", "-sS", "-m", "10", "-x", "http://" + f.addr}, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func (f *proxyFixture) logEntries(t *testing.T) []netpolicy.Entry {
	t.Helper()
	data, err := os.ReadFile(f.layout.logFile("lmcp-test"))
	if err != nil {
		return nil
	}
	_, entries, err := netpolicy.ReadLog(strings.NewReader(string(data)), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestProxyAllowsAndRefuses(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	allowed := fmt.Sprintf("http://localhost:%d/path?q=1", port)

	out, code := f.curlAs(t, "-i", "-H", "Proxy-Authorization: Basic c2VjcmV0", "-d", "12345", allowed)
	if code != 0 || !strings.Contains(out, "hello POST /path?q=1 body=5") {
		t.Fatalf("allowed plain HTTP: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "X-Seen-Connection: close") || !strings.Contains(out, "X-Seen-Proxy-Authorization: \r\n") {
		t.Errorf("hop-by-hop headers reached the server:\n%s", out)
	}

	// CONNECT: curl tunnels plain HTTP through it with -p.
	out, code = f.curlAs(t, "-p", allowed)
	if code != 0 || !strings.Contains(out, "hello GET /path?q=1") {
		t.Fatalf("allowed CONNECT: exit %d\n%s", code, out)
	}

	out, code = f.curlAs(t, "-i", fmt.Sprintf("http://127.0.0.1:%d/", port))
	if !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, fmt.Sprintf("limactl-mcp network policy allow:localhost: host 127.0.0.1 is not on the allowlist (ask the person to allow it: limactl mcp network INSTANCE allow 127.0.0.1:%d)", port)) {
		t.Errorf("refused plain HTTP: exit %d\n%s", code, out)
	}
	out, code = f.curlAs(t, "-p", "https://denied.test/")
	if code == 0 || !strings.Contains(out, "403") {
		t.Errorf("refused CONNECT: exit %d\n%s", code, out)
	}

	entries := f.logEntries(t)
	var summary []string
	for _, e := range entries {
		summary = append(summary, fmt.Sprintf("%s:%d %s %s up>0=%v down>0=%v", e.Host, e.Port, e.Verdict, e.Via, e.BytesUp > 0, e.BytesDown > 0))
	}
	want := []string{
		fmt.Sprintf("localhost:%d allowed proxy up>0=true down>0=true", port),
		fmt.Sprintf("localhost:%d allowed proxy up>0=true down>0=true", port),
		fmt.Sprintf("127.0.0.1:%d blocked proxy up>0=false down>0=false", port),
		"denied.test:443 blocked proxy up>0=false down>0=false",
	}
	if strings.Join(summary, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(summary, "\n"), strings.Join(want, "\n"))
	}
	// A refusal names the command that made it (the agent's curl, found by its socket);
	// an allowed connection names none.
	if len(entries) == 4 {
		for i, e := range entries {
			switch {
			case e.Verdict == netpolicy.VerdictBlocked && !strings.HasPrefix(e.Command, "curl -sS -m 10 -x http://"+f.addr):
				t.Errorf("entry %d (%s:%d refused): command %q, want the agent's curl", i, e.Host, e.Port, e.Command)
			case e.Verdict == netpolicy.VerdictAllowed && e.Command != "":
				t.Errorf("entry %d (allowed): command %q", i, e.Command)
			}
		}
		if !strings.HasSuffix(entries[3].Command, " -p https://denied.test/") {
			t.Errorf("the refused CONNECT's command %q does not end with its arguments", entries[3].Command)
		}
	}
}

// TestCommandOfIsBounded: the look for the command behind a socket finds the process that
// holds it, caps what it says (valid UTF-8, MaxEntryCommand bytes), finds nothing for another
// uid or an inode nobody holds, and stops after peerLooksPerSecond looks of one uid a second.
func TestCommandOfIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client := netip.MustParseAddrPort(c.LocalAddr().String())
	server := netip.MustParseAddrPort(ln.Addr().String())
	uid, inode, err := peerUID(client, server)
	if err != nil {
		t.Fatal(err)
	}
	cmd := commandOf(uid, inode)
	if !strings.HasPrefix(cmd, os.Args[0]) || len(cmd) > netpolicy.MaxEntryCommand || !utf8.ValidString(cmd) {
		t.Errorf("commandOf(this test's socket) = %q, want this test's command line (%s ...)", cmd, os.Args[0])
	}
	if got := commandOf(uid+12345, inode); got != "" {
		t.Errorf("another uid: %q", got)
	}
	if got := commandOf(uid, inode+1<<30); got != "" {
		t.Errorf("an inode nobody holds: %q", got)
	}
	var looks peerLooks
	n := 0
	for range 3 * peerLooksPerSecond {
		if looks.allow(uid) {
			n++
		}
	}
	if n > 2*peerLooksPerSecond || n < peerLooksPerSecond {
		t.Errorf("%d looks allowed in a burst, want about %d", n, peerLooksPerSecond)
	}
	if !looks.allow(uid+1) && n <= peerLooksPerSecond {
		t.Error("another uid's looks are limited by this one's")
	}
}

// TestProxyHonoursPorts: an entry host:port lets that port through and refuses the others,
// through CONNECT and in plain HTTP, and says so.
func TestProxyHonoursPorts(t *testing.T) {
	f := startProxyFixture(t, "none")
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	other := port + 1
	if other > 65535 {
		other = port - 1
	}
	u, _ := user.Lookup(f.agent)
	uid, _ := strconv.Atoi(u.Uid)
	writePolicy(t, f.layout, UserPolicy{User: "lmcp-test", UID: uid, Policy: fmt.Sprintf("allow:localhost:%d,127.0.0.1:%d", port, other)})
	url := fmt.Sprintf("http://localhost:%d/p", port)
	if out, code := f.curlAs(t, url); code != 0 || !strings.Contains(out, "hello GET /p") {
		t.Fatalf("the allowed port, plain HTTP: exit %d\n%s", code, out)
	}
	if out, code := f.curlAs(t, "-p", url); code != 0 || !strings.Contains(out, "hello GET /p") {
		t.Fatalf("the allowed port, CONNECT: exit %d\n%s", code, out)
	}
	for _, refused := range []string{fmt.Sprintf("http://localhost:%d/", other), fmt.Sprintf("http://127.0.0.1:%d/", port)} {
		out, _ := f.curlAs(t, "-i", refused)
		if !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, "is allowed on other ports only") {
			t.Errorf("%s: plain HTTP not refused for its port:\n%s", refused, out)
		}
		if out, code := f.curlAs(t, "-p", refused); code == 0 || !strings.Contains(out, "403") {
			t.Errorf("%s: CONNECT not refused for its port: exit %d\n%s", refused, code, out)
		}
	}
}

func TestProxyRefusesUnknownUser(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	// This test runs as root, which has no policy file.
	out, err := exec.Command("curl", "-sS", "-i", "-m", "10", "-x", "http://"+f.addr, f.upstream.URL).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "403") || !strings.Contains(string(out), "uid 0 has no network policy") {
		t.Errorf("root through the proxy: %v\n%s", err, out)
	}
}

func TestProxyFollowsPolicyChanges(t *testing.T) {
	f := startProxyFixture(t, "none")
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	url := fmt.Sprintf("http://localhost:%d/", port)
	if out, _ := f.curlAs(t, "-i", url); !strings.Contains(out, "limactl-mcp network policy none: no host may be reached") {
		t.Fatalf("none: %s", out)
	}
	u, _ := user.Lookup(f.agent)
	uid, _ := strconv.Atoi(u.Uid)
	writePolicy(t, f.layout, UserPolicy{User: "lmcp-test", UID: uid, Policy: "allow:localhost"})
	if out, code := f.curlAs(t, url); code != 0 || !strings.Contains(out, "hello GET /") {
		t.Fatalf("after allowing localhost: exit %d\n%s", code, out)
	}
}

func TestProxyGarbage(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	for _, garbage := range []string{"\x00\x01\x02\r\n\r\n", "GET / HTTP/1.1\r\n\r\n", "CONNECT nohostport HTTP/1.1\r\n\r\n",
		"GET ftp://localhost/ HTTP/1.1\r\n\r\n", "GET http://[::1 HTTP/1.1\r\n\r\n", strings.Repeat("A", 70000)} {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, garbage)
		reply, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(reply), "HTTP/1.1 4") {
			t.Errorf("%q: %q", truncate(garbage, 40), truncate(string(reply), 200))
		}
	}
	if h, ok := proxyHealth(context.Background(), f.addr); !ok || h.Exe == "" {
		t.Errorf("health after garbage: %+v %v", h, ok)
	}
}

// TestProxyLatency measures what the proxy adds to a plain HTTP request on loopback: p50 of
// curl through the proxy against curl straight to the server, same run (curl's own start is in
// both).
func TestProxyLatency(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	url := fmt.Sprintf("http://localhost:%d/", f.upstream.Listener.Addr().(*net.TCPAddr).Port)
	measure := func(args ...string) time.Duration {
		var times []time.Duration
		for i := 0; i < 30; i++ {
			t0 := time.Now()
			out, err := exec.Command("runuser", append([]string{"-u", f.agent, "--", "curl", "-sS", "-m", "10"}, args...)...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "hello") {
				t.Fatalf("curl %v: %v %s", args, err, out)
			}
			times = append(times, time.Since(t0))
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		return times[len(times)/2]
	}
	direct := measure(url)
	proxied := measure("-x", "http://"+f.addr, url)
	tunneled := measure("-p", "-x", "http://"+f.addr, url)
	t.Logf("p50 of 30: direct %v, through the proxy %v (+%v), CONNECT tunnel %v (+%v)", direct, proxied, proxied-direct, tunneled, tunneled-direct)
}
