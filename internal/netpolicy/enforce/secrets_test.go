package enforce

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// relayServer is a stand-in for the host's relay behind sshd's streamlocal forward: a process
// of the relay user (python3, as that user) listening on the relay socket, that answers each
// connection with the line it was sent (the target) in an HTTP response.
const relayServer = `
import socket, sys, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(16)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    try:
        f = c.makefile("rb")
        target = f.readline().decode().strip()
        while f.readline() not in (b"\r\n", b"\n", b""):
            pass
        body = ("relay got " + target + (" by " + sys.argv[2] if len(sys.argv) > 2 else "")).encode()
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        f.close()
        c.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # a probe (a connection that ends at once)
    c.close()
`

// secretsFixture is the proxy fixture with a session whose bound host is bound.test:443 (and
// the upstream's localhost:PORT), its relay directory the relay user's.
type secretsFixture struct {
	*proxyFixture
	relayUID int
	dir      string // the relay directory
	hits     *atomic.Int64
}

func startSecretsFixture(t *testing.T) *secretsFixture {
	t.Helper()
	f := startProxyFixture(t, "allow:localhost")
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 for the stand-in relay")
	}
	u, _ := user.Lookup(f.agent)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// The relay user is the client's user here (one unprivileged user is all the fixture has):
	// what is checked is that the directory and the listener are the uid the policy names.
	base, err := os.MkdirTemp("", "secrets-proxy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	f.layout.Secrets = filepath.Join(base, "secrets")
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	setup := &netpolicy.SecretsSetup{Hosts: []string{"bound.test:443", fmt.Sprintf("localhost:%d", port)}}
	if err := ensureRootDir(f.layout.Secrets); err != nil {
		t.Fatal(err)
	}
	dir := f.layout.secretsDir("lmcp-test")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	writePolicy(t, f.layout, UserPolicy{User: "lmcp-test", UID: uid, Policy: "allow:localhost,bound.test", SecretHosts: setup.Hosts, RelayUID: uid})
	// The proxy was made with the fixture's layout: it must see the relay directory too.
	sf := &secretsFixture{proxyFixture: f, relayUID: uid, dir: dir, hits: &atomic.Int64{}}
	return sf
}

// startRelay starts the stand-in relay as the relay user on the fixture's socket.
func (f *secretsFixture) startRelay(t *testing.T) { f.startNamedRelay(t, "") }

// startNamedRelay starts the stand-in relay named name ("": the older builds' one), which
// answers "relay got TARGET by NAME"; the function it returns kills it (its socket stays, as
// a relay whose process ended leaves it).
func (f *secretsFixture) startNamedRelay(t *testing.T, name string) func() {
	t.Helper()
	args := []string{"-u", f.agent, "--", "/usr/bin/python3", "-c", relayServer, filepath.Join(f.dir, netpolicy.RelaySocketName(name))}
	if name != "" {
		args = append(args, name)
	}
	cmd := exec.Command("runuser", args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	// A group of its own: runuser's child, python, is killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }) }
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("the stand-in relay did not start: %q %v", line, err)
	}
	return stop
}

// restartProxy makes the fixture's proxy again with the relay layout (the fixture's proxy was
// made before the test set Layout.Secrets).
func (f *secretsFixture) restartProxy(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.layout.ProxyAddrs = []string{ln.Addr().String()}
	f.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewProxy(f.layout).Serve(ctx, []net.Listener{ln}) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestProxyHandsBoundHostsToTheRelay(t *testing.T) {
	f := startSecretsFixture(t)
	f.restartProxy(t)
	f.startRelay(t)
	// A CONNECT to a bound host goes to the relay, which is told the target; curl -p sends
	// plain HTTP inside the tunnel, which the stand-in answers.
	out, code := f.curlAs(t, "-p", "http://bound.test:443/v1/messages")
	if code != 0 || !strings.Contains(out, "relay got bound.test:443") {
		t.Fatalf("CONNECT bound.test:443: exit %d\n%s", code, out)
	}
	out, code = f.curlAs(t, "-p", "http://BOUND.test.:443/")
	if code != 0 || !strings.Contains(out, "relay got bound.test:443") {
		t.Fatalf("CONNECT BOUND.test.:443: exit %d\n%s", code, out)
	}
	// The upstream's own host:port is bound too: it goes to the relay, not to the upstream.
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	out, code = f.curlAs(t, "-p", fmt.Sprintf("http://localhost:%d/", port))
	if code != 0 || !strings.Contains(out, fmt.Sprintf("relay got localhost:%d", port)) {
		t.Fatalf("CONNECT to the bound upstream: exit %d\n%s", code, out)
	}
	// Another port of a bound name is an ordinary allowed host: tunnelled as before (refused
	// by nobody here: bound.test does not resolve, so the dial fails with a 502 of the proxy).
	out, _ = f.curlAs(t, "-i", "-p", "http://bound.test:8443/")
	if strings.Contains(out, "relay got") {
		t.Errorf("bound.test:8443 reached the relay:\n%s", out)
	}
}

// lastReason is the reason of the fixture log's last entry (curl does not show the body of a
// CONNECT's error response).
func (f *secretsFixture) lastReason(t *testing.T) string {
	t.Helper()
	entries := f.logEntries(t)
	if len(entries) == 0 {
		return ""
	}
	return entries[len(entries)-1].Reason
}

func TestProxyRelayNeverFallsBack(t *testing.T) {
	f := startSecretsFixture(t)
	f.restartProxy(t)
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	target := fmt.Sprintf("http://localhost:%d/", port)
	// No relay listening: a 502 that says so, and the bound upstream is never reached directly.
	out, code := f.curlAs(t, "-i", "-p", target)
	if code == 0 || !strings.Contains(out, "502") || strings.Contains(out, "hello") || !strings.Contains(f.lastReason(t), "no relay listening") {
		t.Fatalf("no relay: exit %d (%s)\n%s", code, f.lastReason(t), out)
	}

	// A listener that is not the relay user's (root's here) is refused.
	ln, err := net.Listen("unix", filepath.Join(f.dir, netpolicy.RelaySocketName("")))
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(f.dir, netpolicy.RelaySocketName("")), 0o777)
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// The proxy connects before it can ask who listens; it must write nothing.
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, _ := c.Read(make([]byte, 64)); n > 0 {
				accepted <- struct{}{}
			}
			c.Close()
		}
	}()
	out, code = f.curlAs(t, "-i", "-p", target)
	ln.Close()
	if code == 0 || !strings.Contains(f.lastReason(t), "not held by the Lima user") {
		t.Fatalf("root's listener: exit %d (%s)\n%s", code, f.lastReason(t), out)
	}
	os.Remove(filepath.Join(f.dir, netpolicy.RelaySocketName("")))

	// The directory swapped for a link to another (the relay user's, holding a live relay) is
	// never followed.
	other := filepath.Join(filepath.Dir(filepath.Dir(f.dir)), "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(other, f.relayUID, -1)
	good := f.dir
	f.dir = other
	f.startRelay(t)
	f.dir = good
	if err := os.Remove(good); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, good); err != nil {
		t.Fatal(err)
	}
	out, code = f.curlAs(t, "-i", "-p", target)
	if code == 0 || !strings.Contains(f.lastReason(t), "symbolic link") || strings.Contains(out, "relay got") {
		t.Fatalf("a link for the relay directory: exit %d (%s)\n%s", code, f.lastReason(t), out)
	}

	// A directory others may enter is refused.
	os.Remove(good)
	os.Rename(other, good)
	os.Chmod(good, 0o755)
	out, code = f.curlAs(t, "-i", "-p", target)
	if code == 0 || !strings.Contains(f.lastReason(t), "mode 0700") {
		t.Fatalf("a 0755 relay directory: exit %d (%s)\n%s", code, f.lastReason(t), out)
	}
	os.Chmod(good, 0o700)
	if out, code = f.curlAs(t, "-p", target); code != 0 || !strings.Contains(out, "relay got localhost") {
		t.Fatalf("the directory put right: exit %d\n%s", code, out)
	}
	select {
	case <-accepted:
		t.Error("the proxy wrote to a listener that is not the relay user's")
	default:
	}
}

func TestSecretsPolicyChecks(t *testing.T) {
	ca := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	s := &netpolicy.SecretsSetup{Hosts: []string{"api.anthropic.com:443"}, CAPEM: ca}
	for spec, want := range map[string]string{
		"none":                    "cannot be used under network none",
		"open":                    "not carried under network open",
		"allow:example.com":       "bound host api.anthropic.com is not on the allowlist",
		"allow:api.anthropic.com": "",
		"allow:*.anthropic.com":   "",
	} {
		p, err := netpolicy.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		err = checkSecretsPolicy(p, s)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	l := Layout{TrustDir: "/usr/local/share/ca-certificates", TrustBundle: "/etc/ssl/certs/ca-certificates.crt"}
	s.Env = []string{"ANTHROPIC_API_KEY=sk-ant-api03-LMCPPLACEHOLDERabcdefghijklmnopqrstuv"}
	env := secretsEnv(l, "lmcp-x", s)
	for _, want := range []string{"NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/limactl-mcp-lmcp-x.crt\n",
		"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt\n", "REQUESTS_CA_BUNDLE=", "CURL_CA_BUNDLE=", "GIT_SSL_CAINFO=", s.Env[0] + "\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	// A policy file naming bound hosts must name the relay user, be under allow, and list them.
	for _, u := range []UserPolicy{
		{User: "lmcp-x", UID: 1000, Policy: "allow:a.test", SecretHosts: []string{"a.test:443"}},
		{User: "lmcp-x", UID: 1000, Policy: "none", SecretHosts: []string{"a.test:443"}, RelayUID: 1},
		{User: "lmcp-x", UID: 1000, Policy: "allow:b.test", SecretHosts: []string{"a.test:443"}, RelayUID: 1},
		{User: "lmcp-x", UID: 1000, Policy: "allow:a.test", SecretHosts: []string{"a.test"}, RelayUID: 1},
		{User: "lmcp-x", UID: 1000, Policy: "allow:a.test", RelayUID: 1},
		{User: "lmcp-x", UID: 1000, Policy: "allow:a.test:ro", RuleTargets: []string{"a.test:443"}},
		{User: "lmcp-x", UID: 1000, Policy: "none", RuleTargets: []string{"a.test:443"}, RelayUID: 1},
		{User: "lmcp-x", UID: 1000, Policy: "allow:a.test:ro", RuleTargets: []string{"a.test"}, RelayUID: 1},
		{User: "lmcp-x", UID: 1000, Policy: "allow:a.test:ro", RuleTargets: []string{"10.0.0.1:443"}, RelayUID: 1},
	} {
		if _, err := u.parsed(); err == nil {
			t.Errorf("%+v: accepted", u)
		}
	}
	if _, err := (UserPolicy{User: "lmcp-x", UID: 1000, Policy: "allow:a.test", SecretHosts: []string{"a.test:443"}, RelayUID: 1}).parsed(); err != nil {
		t.Error(err)
	}
	if _, err := (UserPolicy{User: "lmcp-x", UID: 1000, Policy: "allow:a.test:ro", RuleTargets: []string{"a.test:443"}, RelayUID: 1}).parsed(); err != nil {
		t.Error(err)
	}
}

func TestEnsureAndDropSecretsFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the relay directory is given to another user")
	}
	base := t.TempDir()
	l := Layout{Secrets: filepath.Join(base, "secrets"), TrustDir: filepath.Join(base, "trust"), TrustBundle: "/bundle"}
	s := &netpolicy.SecretsSetup{Hosts: []string{"api.anthropic.com:443"}, CAPEM: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}
	if err := ensureSecrets(context.Background(), l, "lmcp-x", 4242, 4243, s); err != nil {
		t.Fatal(err)
	}
	dir := l.secretsDir("lmcp-x")
	st, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || st.Mode().Perm() != 0o700 || sys.Uid != 4242 || sys.Gid != 4243 {
		t.Errorf("relay directory: %v uid %d gid %d", st.Mode(), sys.Uid, sys.Gid)
	}
	if data, err := os.ReadFile(l.caFile("lmcp-x")); err != nil || string(data) != s.CAPEM {
		t.Errorf("CA: %q %v", data, err)
	}
	// A socket an earlier connection left is removed (the next forward binds there).
	ln, err := net.Listen("unix", filepath.Join(dir, netpolicy.RelaySocketName("")))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	os.Chmod(dir, 0o755)
	if err := ensureSecrets(context.Background(), l, "lmcp-x", 4242, 4243, s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, netpolicy.RelaySocketName(""))); !os.IsNotExist(err) {
		t.Errorf("the old socket is still there: %v", err)
	}
	if st, _ := os.Lstat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("the directory's mode was not put back: %v", st.Mode())
	}
	if err := ensureSecrets(context.Background(), l, "lmcp-x", -1, -1, s); err == nil {
		t.Error("no relay user: accepted")
	}
	if err := dropSecrets(context.Background(), l, "lmcp-x"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, l.caFile("lmcp-x")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
}

// TestTrustStoreByDistribution: the guest's CA store is the one its distribution has: Debian's
// (and Ubuntu's, Alpine's) update-ca-certificates, else Fedora's update-ca-trust; with neither,
// Debian's, whose absence the set-up reports with the fix. The tool runs with its arguments.
func TestTrustStoreByDistribution(t *testing.T) {
	has := func(names ...string) func(string) (string, error) {
		return func(name string) (string, error) {
			for _, n := range names {
				if n == name {
					return "/usr/bin/" + name, nil
				}
			}
			return "", errors.New("not found")
		}
	}
	for _, c := range []struct {
		tools      []string
		dir, tool0 string
	}{
		{[]string{"update-ca-certificates"}, "/usr/local/share/ca-certificates", "update-ca-certificates"},
		{[]string{"update-ca-certificates", "update-ca-trust"}, "/usr/local/share/ca-certificates", "update-ca-certificates"},
		{[]string{"update-ca-trust"}, "/etc/pki/ca-trust/source/anchors", "/usr/bin/update-ca-trust"},
		{nil, "/usr/local/share/ca-certificates", "update-ca-certificates"},
	} {
		dir, bundle, tool := trustStore(has(c.tools...))
		if dir != c.dir || tool[0] != c.tool0 || bundle == "" {
			t.Errorf("with %v: %s %s %v", c.tools, dir, bundle, tool)
		}
	}

	// The tool is run with its arguments (a stand-in that records them).
	tmp := t.TempDir()
	record := filepath.Join(tmp, "args")
	fake := filepath.Join(tmp, "update-ca-trust")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > "+record+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := Layout{UpdateTrust: true, TrustTool: []string{fake, "extract"}}
	if err := updateTrust(context.Background(), l, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(record); err != nil || string(b) != "extract\n" {
		t.Errorf("the tool got %q (%v)", b, err)
	}
	l.TrustTool = []string{filepath.Join(tmp, "update-ca-certificates")}
	if err := updateTrust(context.Background(), l, nil); err == nil || !strings.Contains(err.Error(), "update-ca-certificates is not installed in the guest") || !strings.Contains(err.Error(), "install ca-certificates") {
		t.Errorf("a missing tool: %v", err)
	}
}

// TestProxyHandsRuleTargetsToTheRelay: a CONNECT to a host:port that method and path rules
// only name, and that the session's relay terminates (RuleTargets), goes to the relay with the
// rules the policy holds for it now; on another port, or once a live change drops its rules,
// or when a plain entry allows it, it does not.
func TestProxyHandsRuleTargetsToTheRelay(t *testing.T) {
	f := startSecretsFixture(t)
	relayCommands := false
	write := func(policy string) {
		u, _ := user.Lookup(f.agent)
		uid, _ := strconv.Atoi(u.Uid)
		writePolicy(t, f.layout, UserPolicy{User: "lmcp-test", UID: uid, Policy: policy, RuleTargets: []string{"ruled.test:443"}, RelayUID: uid, RelayCommands: relayCommands})
	}
	relayLine := func(out string) netpolicy.RelayLine {
		t.Helper()
		_, rest, _ := strings.Cut(out, "relay got ")
		line, _, _ := strings.Cut(rest, "\n")
		l, err := netpolicy.ParseRelayLine(strings.TrimSpace(line))
		if err != nil {
			t.Errorf("the relay's line %q: %v", line, err)
		}
		return l
	}
	write("allow:localhost,ruled.test:ro,ruled.test/*/git-upload-pack:POST")
	f.restartProxy(t)
	f.startRelay(t)
	out, code := f.curlAs(t, "-p", "http://RULED.test.:443/o/r.git/info/refs")
	if code != 0 || !strings.Contains(out, "relay got ruled.test:443 ") {
		t.Fatalf("CONNECT ruled.test:443: exit %d\n%s", code, out)
	}
	for _, rule := range []string{"ruled.test:ro", "ruled.test/*/git-upload-pack:POST"} {
		if !strings.Contains(out, rule) {
			t.Errorf("the relay's line lacks the rule %s: %s", rule, out)
		}
	}
	// A relay that does not say it reads the command (an older host's) gets none on its line.
	if l := relayLine(out); l.Command != "" {
		t.Errorf("a command sent to a relay that does not read it: %+v", l)
	}
	// One that does (RelayCommands: this build's set-up) gets the command behind the
	// connection: the agent's curl, found by its socket.
	relayCommands = true
	write("allow:localhost,ruled.test:ro,ruled.test/*/git-upload-pack:POST")
	out, code = f.curlAs(t, "-p", "http://ruled.test:443/with-command")
	if l := relayLine(out); code != 0 || !strings.HasPrefix(l.Command, "curl ") || !strings.Contains(l.Command, "http://ruled.test:443/with-command") || len(l.Rules) != 2 {
		t.Errorf("the relay's line for a relay that reads the command: %+v (exit %d)\n%s", l, code, out)
	}
	// Another port: not a rule target; refused as a tunnel the proxy cannot read.
	out, _ = f.curlAs(t, "-i", "-p", "http://ruled.test:8443/")
	if strings.Contains(out, "relay got") || f.lastReason(t) != "tunnel under http rules" {
		t.Errorf("ruled.test:8443: %q (%s)", out, f.lastReason(t))
	}
	// Rules of the same host with a live change: the relay gets the new ones.
	write("allow:localhost,ruled.test:GET")
	out, code = f.curlAs(t, "-p", "http://ruled.test:443/")
	if code != 0 || !strings.Contains(out, "relay got ruled.test:443 ruled.test:GET") || strings.Contains(out, "upload-pack") {
		t.Errorf("after the change of rules: exit %d\n%s", code, out)
	}
	// The rules dropped: refused, never relayed (the target alone allows nothing).
	write("allow:localhost")
	out, _ = f.curlAs(t, "-i", "-p", "http://ruled.test:443/")
	if strings.Contains(out, "relay got") || f.lastReason(t) != "not on the allowlist" {
		t.Errorf("without rules: %q (%s)", out, f.lastReason(t))
	}
	// A plain entry allows every request: a tunnel, not the relay.
	write("allow:localhost,ruled.test,ruled.test:ro")
	out, _ = f.curlAs(t, "-i", "-p", "http://ruled.test:443/")
	if strings.Contains(out, "relay got") {
		t.Errorf("a plainly allowed host went to the relay: %q", out)
	}
}
