//go:build e2e

package e2e

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Secrets end to end (issue 25): `limactl mcp shell --secret ANTHROPIC_API_KEY` under allow:,
// with a fake api.anthropic.com on the host's loopback (TLS, a CA of its own) that the relay
// dials through its test hook (there is no internet here). In the guest, curl, python3 and node
// (when the image has it) reach it with the real value; the value is in no guest process's
// environ or cmdline; the placeholder sent to an allowed, unbound host stays a placeholder; a
// connection that skips the proxy gets nothing.
func TestSecretsRelay(t *testing.T) {
	// The value: its middle spelled so that the scan's own command line does not hold it.
	const value = "sk-ant-api03-e2eREAL7Q9value-0123456789abcdef"
	const valueRE = "e2eREA[L]7Q9value"

	dir, prov, env := secretsProject(t, value)
	pln := prov.ln
	echoPort := startEchoHost(t)
	user := staging.AgentUser(staging.SessionID(dir))

	script := `echo "PLACEHOLDER=$ANTHROPIC_API_KEY"
curl -sS --max-time 60 -H "x-api-key: $ANTHROPIC_API_KEY" https://api.anthropic.com/v1/models; echo
if command -v python3 >/dev/null; then python3 -c '
import os, urllib.request
r = urllib.request.Request("https://api.anthropic.com/v1/models", headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"]})
print("PY", urllib.request.urlopen(r, timeout=60).read().decode())'; else echo "PY none"; fi
if command -v node >/dev/null; then node -e '
const https = require("https"), http = require("http");
const u = new URL(process.env.HTTPS_PROXY);
const req = http.request({host: u.hostname, port: u.port, method: "CONNECT", path: "api.anthropic.com:443"});
req.on("connect", (res, socket) => {
  https.get({host: "api.anthropic.com", path: "/v1/models", socket, agent: false, headers: {"x-api-key": process.env.ANTHROPIC_API_KEY}}, r => {
    let b = ""; r.on("data", d => b += d); r.on("end", () => console.log("NODE", b));
  }).on("error", e => console.log("NODE error", e.message));
});
req.end();'; else echo "NODE none"; fi
python3 -c '
import os, socket, ssl, time
h, p = os.environ["HTTPS_PROXY"].split("//")[1].rstrip("/").rsplit(":", 1)
s = socket.create_connection((h, int(p)), timeout=60)
s.sendall(b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n")
b = b""
while b"\r\n\r\n" not in b:
    b += s.recv(100)
t = ssl.create_default_context().wrap_socket(s, server_hostname="api.anthropic.com")
time.sleep(400)' >/dev/null 2>&1 &
curl -sS --max-time 20 -H "x-api-key: $ANTHROPIC_API_KEY" http://echo-secrets.test:` + fmt.Sprint(echoPort) + `/; echo
ip=$(getent hosts host.lima.internal | awk '{print $1; exit}')
curl -sS --noproxy '*' --max-time 10 --resolve api.anthropic.com:` + fmt.Sprint(pln.Addr().(*net.TCPAddr).Port) + `:$ip -k -H "x-api-key: $ANTHROPIC_API_KEY" https://api.anthropic.com:` + fmt.Sprint(pln.Addr().(*net.TCPAddr).Port) + `/ >/dev/null 2>&1 && echo DIRECT-REACHED || echo DIRECT-REFUSED
exec sleep 171`

	cmd := mcpShellCmd(t, dir, env, "--network=allow:echo-secrets.test", "--secret", "ANTHROPIC_API_KEY", "--no-review", instanceName, "--", "sh", "-c", script)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	mustT(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// While the agent's command still runs (its last step, sleep 171): no process of the guest
	// holds the value in its environment or command line.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if out := guestShell(t, "pgrep -fx 'sleep 171' || true"); strings.TrimSpace(out) != "" {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the shell ended early: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		case <-time.After(2 * time.Second):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's command never got to its end\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}
	checkRelayPort(t, user)
	scan := guestShell(t, `sudo sh -c 'for p in /proc/[0-9]*; do for f in environ cmdline; do grep -l -a -e `+shq(valueRE)+` $p/$f 2>/dev/null; done; done; true'`)
	// Nor in any guest process's memory, read as root through /proc/PID/mem. A canary process
	// holding a string of its own shows that the scan finds what is there.
	guestShell(t, `nohup python3 -c 'import sys, time; c = sys.argv[1] + sys.argv[2]; time.sleep(90)' memCAN ARYe2e >/dev/null 2>&1 &`)
	memScan := guestMemoryScan(t, [2]string{"e2eREA", "L7Q9value"}, [2]string{"memCAN", "ARYe2e"})
	guestShell(t, "pkill -f 'memCA[N] ARYe2e' || true")
	guestShell(t, "sudo pkill -fx 'sleep 171' || true")
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the shell did not end")
	}
	out := stdout.String()
	t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr.String())
	if strings.TrimSpace(scan) != "" {
		t.Errorf("the value is in guest processes: %s", scan)
	}
	t.Logf("guest memory scan: %s", memScan)
	if !strings.Contains(memScan, "SCANNED ") || strings.Contains(memScan, "HIT 0 ") {
		t.Errorf("the value is in guest memory (or the scan did not run): %s", memScan)
	}
	if !strings.Contains(memScan, "HIT 1 ") {
		t.Errorf("the memory scan did not find the canary process's string: it would not find the value either")
	}
	// Nor on the guest's disk, nor in any file Lima or limactl-mcp keeps for the instance on the
	// host (its logs, the session's state and use log): the instance's directory holds the
	// guest's disk images, read raw after the guest flushed its writes. A canary file written
	// in the guest shows that the scan reads what the guest wrote.
	canary := fmt.Sprintf("diskCANARY-%d-e2e", time.Now().UnixNano())
	guestShell(t, "printf '%s\\n' "+shq(canary)+" > ~/secrets-scan-canary.txt && sudo sync")
	defer guestShell(t, "rm -f ~/secrets-scan-canary.txt")
	instDir := filepath.Join(vm.LimaHome, instanceName)
	files, size, hits := scanFilesFor(t, instDir, []byte(value), []byte(canary))
	t.Logf("host scan of %s: %d files, %d MB", instDir, files, size>>20)
	for _, h := range hits[0] {
		t.Errorf("the value is in %s", h)
	}
	if len(hits[1]) == 0 {
		t.Errorf("the disk scan of %s did not find the canary the guest wrote: it would not find the value either", instDir)
	}
	if strings.Contains(out, value) || strings.Contains(stderr.String(), value) {
		t.Errorf("the value reached the command's output")
	}
	if !strings.Contains(out, "PLACEHOLDER=sk-ant-api03-"+secrets.PlaceholderMark) {
		t.Errorf("the agent does not hold the placeholder")
	}
	if !strings.Contains(out, "\nPROVIDER key-ok=true\n") {
		t.Errorf("curl did not reach the provider with the value")
	}
	if !strings.Contains(out, "PY PROVIDER key-ok=true") && !strings.Contains(out, "PY none") {
		t.Errorf("python3 did not reach the provider with the value")
	}
	if !strings.Contains(out, "NODE PROVIDER key-ok=true") && !strings.Contains(out, "NODE none") {
		t.Errorf("node did not reach the provider with the value")
	}
	if !strings.Contains(out, "ECHO sk-ant-api03-"+secrets.PlaceholderMark) {
		t.Errorf("the unbound host did not get the placeholder")
	}
	if !strings.Contains(out, "DIRECT-REFUSED") {
		t.Errorf("a connection that skips the proxy reached the provider")
	}
	for _, k := range prov.keys() {
		if k != value {
			t.Errorf("the provider got a request without the value: %q", k)
		}
	}
	if !strings.Contains(stderr.String(), "join the allowlist for this run: api.anthropic.com") {
		t.Errorf("the shell did not say that the bound host joins the allowlist")
	}
	// status shows the uses.
	st, _, code := plugin(t, dir, "status", instanceName)
	if code != 0 || !strings.Contains(st, "ANTHROPIC_API_KEY used") || !strings.Contains(st, "only with api.anthropic.com") {
		t.Errorf("status: %s", st)
	}
	// The system bundle holds the session's CA (once) while the session lives, and no more
	// once it is discarded (written by the runner itself, not update-ca-certificates).
	caFile := "/usr/local/share/ca-certificates/limactl-mcp-" + user + ".crt"
	line := strings.TrimSpace(guestShell(t, "sed -n 3p "+caFile))
	inBundle := func() string {
		return strings.TrimSpace(guestShell(t, "grep -c -F -- "+shq(line)+" /etc/ssl/certs/ca-certificates.crt || true"))
	}
	if n := inBundle(); len(line) < 60 || n != "1" {
		t.Errorf("the session's CA (%q) is %s times in the system bundle, want once", line, n)
	}
	if _, stderr, code := plugin(t, dir, "discard", instanceName, "--yes"); code != 0 {
		t.Fatalf("discard: exit %d: %s", code, stderr)
	}
	if n := inBundle(); n != "0" {
		t.Errorf("the discarded session's CA is %s times in the system bundle, want none", n)
	}
	if out := guestShell(t, "ls "+caFile+" 2>&1 || true"); !strings.Contains(out, "No such file") {
		t.Errorf("the discarded session's CA file: %s", out)
	}
	_ = io.Discard
}

// checkRelayPort checks the relay's port on the host while the agent of user holds a
// connection to a bound host (its script's python3 holder): the guest's proxy reaches the
// relay there through the VM's NAT, not through sshd; the port and its key are in a file of
// root's alone, which the agent cannot read; a connection that does not prove the key, from
// the guest, gets nothing.
func checkRelayPort(t *testing.T, user string) {
	t.Helper()
	file := "/etc/limactl-mcp/net/" + user + ".relays"
	out := guestShell(t, "sudo stat -c '%a %U' "+file+" && sudo cat "+file)
	mode, data, _ := strings.Cut(out, "\n")
	var ports map[string]struct {
		Port int    `json:"port"`
		Key  string `json:"key"`
	}
	if mode != "600 root" || json.Unmarshal([]byte(data), &ports) != nil || len(ports) != 1 {
		t.Fatalf("the relays file: %q", out)
	}
	port := 0
	for _, p := range ports {
		port = p.Port
		if len(p.Key) != 64 {
			t.Errorf("the relay's key is %d hex digits", len(p.Key))
		}
	}
	if got := guestShell(t, "sudo -u "+user+" cat "+file+" 2>&1 || echo AGENT-REFUSED"); !strings.Contains(got, "AGENT-REFUSED") || strings.Contains(got, "key") {
		t.Errorf("the agent read the relays file: %s", got)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		est := guestShell(t, fmt.Sprintf("sudo ss -tnHp state established dst %s:%d || true", strings.TrimSpace(guestShell(t, "getent hosts host.lima.internal | awk '{print $1; exit}'")), port))
		if strings.Contains(est, "net proxy") || strings.Contains(est, "runner-") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guest's proxy holds no connection to the relay's port %d: %q", port, est)
		}
		time.Sleep(time.Second)
	}
	// Without the handshake: a TLS client, and the proxy's line sent as is.
	if got := guestShell(t, fmt.Sprintf(`curl -sS --noproxy '*' --max-time 10 -k --connect-to api.anthropic.com:443:host.lima.internal:%d -H "x-api-key: sk-ant-api03-guess" https://api.anthropic.com/v1/models 2>&1 && echo PORT-SERVED || echo PORT-REFUSED`, port)); !strings.Contains(got, "PORT-REFUSED") {
		t.Errorf("a TLS client at the relay's port: %s", got)
	}
	if got := guestShell(t, fmt.Sprintf(`python3 -c '
import socket, sys
s = socket.create_connection(("host.lima.internal", %d), timeout=10)
s.sendall(b"api.anthropic.com:443\n" + b"x" * 64)
try:
    print("GOT %%d BYTES" %% len(s.recv(100)))
except ConnectionResetError:
    print("GOT 0 BYTES")' 2>&1`, port)); !strings.Contains(got, "GOT 0 BYTES") {
		t.Errorf("the proxy's line alone at the relay's port: %s", got)
	}
}

// secretsProject makes a project directory (one file, discarded when the test ends), a fake
// api.anthropic.com, and the environment that gives a command value as ANTHROPIC_API_KEY and
// points the relay's test hook at the fake.
func secretsProject(t *testing.T, value string) (dir string, prov *fakeProvider, env []string) {
	t.Helper()
	prov = startFakeProvider(t, value)
	dir = homeWorkdir(t)
	mustT(t, os.WriteFile(filepath.Join(dir, "main.txt"), []byte("one\n"), 0o644))
	_ = os.Chown(filepath.Join(dir, "main.txt"), vmUID(t), vmGID(t))
	discardOnCleanup(t, dir)
	env = []string{"ANTHROPIC_API_KEY=" + value,
		secrets.TestUpstreamEnv + "=api.anthropic.com:443=" + prov.ln.Addr().String(),
		secrets.TestCAEnv + "=" + prov.caFile}
	return dir, prov, env
}

// startEchoHost serves plain HTTP on the host's loopback as echo-secrets.test (the guest's
// /etc/hosts), answering "ECHO " and the x-api-key it got; it returns the port.
func startEchoHost(t *testing.T) int {
	t.Helper()
	eln, err := net.Listen("tcp", "127.0.0.1:0")
	mustT(t, err)
	echo := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "ECHO %s", r.Header.Get("X-Api-Key"))
	})}
	go echo.Serve(eln)
	t.Cleanup(func() { echo.Close() })
	guestShell(t, `grep -q '# limactl-mcp-e2e-secrets' /etc/hosts || echo "$(getent hosts host.lima.internal | awk '{print $1; exit}') echo-secrets.test # limactl-mcp-e2e-secrets" | sudo tee -a /etc/hosts >/dev/null`)
	return eln.Addr().(*net.TCPAddr).Port
}

// fakeProvider is a TLS server on the host's loopback answering as api.anthropic.com (a CA of
// its own, in caFile for the relay's test hook), recording the x-api-key of each request and
// answering "PROVIDER key-ok=BOOL".
type fakeProvider struct {
	ln     net.Listener
	caFile string
	mu     sync.Mutex
	got    []string
}

// startFakeProvider serves api.anthropic.com (and more hosts, if named) on the host's
// loopback: each answer says whether the request's x-api-key was value.
func startFakeProvider(t *testing.T, value string, more ...string) *fakeProvider {
	t.Helper()
	caDir := t.TempDir()
	hosts := append([]string{"api.anthropic.com"}, more...)
	provCA, err := secrets.OpenCA(caDir, hosts)
	mustT(t, err)
	var certs []tls.Certificate
	for _, h := range hosts {
		leaf, err := provCA.Leaf(h)
		mustT(t, err)
		certs = append(certs, *leaf)
	}
	pln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: certs})
	mustT(t, err)
	p := &fakeProvider{ln: pln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Api-Key")
		p.mu.Lock()
		p.got = append(p.got, key)
		p.mu.Unlock()
		fmt.Fprintf(w, "PROVIDER key-ok=%v", key == value)
	})}
	go srv.Serve(pln)
	t.Cleanup(func() { srv.Close() })
	p.caFile = writeHookCA(t, provCA.CertPEM())
	return p
}

// writeHookCA writes a fake provider's CA certificate for the relay's test hook
// (secrets.TestCAEnv), readable by the user the plugin runs as, and returns its path.
func writeHookCA(t *testing.T, pem []byte) string {
	t.Helper()
	hookDir, err := os.MkdirTemp("", "secrets-e2e-")
	mustT(t, err)
	t.Cleanup(func() { os.RemoveAll(hookDir) })
	mustT(t, os.Chmod(hookDir, 0o755))
	file := filepath.Join(hookDir, "provider-ca.pem")
	mustT(t, os.WriteFile(file, pem, 0o644))
	return file
}

func (p *fakeProvider) keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

func (p *fakeProvider) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// guestMemoryScan reads, as root in the guest, every readable mapping of every process but
// its own through /proc/PID/mem and prints "SCANNED …", then "HIT I pid mapping cmdline" for
// each mapping that holds needle I (each given in two parts, so that no command line holds
// it whole; the scanner itself, which joins them, is skipped).
func guestMemoryScan(t *testing.T, needles ...[2]string) string {
	t.Helper()
	const script = `
import os, sys
needles = [(sys.argv[i] + sys.argv[i + 1]).encode() for i in range(1, len(sys.argv), 2)]
longest = max(len(n) for n in needles)
me = os.getpid()
procs = scanned = skipped = 0
hits = []
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == me:
        continue
    try:
        maps = open("/proc/%s/maps" % pid).read().splitlines()
        mem = open("/proc/%s/mem" % pid, "rb", 0)
    except OSError:
        continue
    procs += 1
    for line in maps:
        f = line.split()
        name = f[5] if len(f) > 5 else "anon"
        if f[1][0] != "r" or name in ("[vvar]", "[vvar_vclock]", "[vsyscall]"):
            continue
        a, b = (int(x, 16) for x in f[0].split("-"))
        if b - a > 512 << 20:
            skipped += 1
            continue
        tail = b""
        pos = a
        found = set()
        while pos < b:
            n = min(16 << 20, b - pos)
            try:
                mem.seek(pos)
                data = mem.read(n)
            except (OSError, ValueError, OverflowError):
                break
            if not data:
                break
            scanned += len(data)
            for i, needle in enumerate(needles):
                if i not in found and needle in tail + data:
                    found.add(i)
                    try:
                        cmd = open("/proc/%s/cmdline" % pid, "rb").read().replace(b"\0", b" ")[:200]
                    except OSError:
                        cmd = b"?"
                    hits.append("%d %s %s %r" % (i, pid, name, cmd))
            tail = data[-longest:]
            pos += len(data)
    mem.close()
print("SCANNED %d processes, %d MB, %d mappings over 512 MB left out" % (procs, scanned >> 20, skipped))
for h in hits:
    print("HIT", h)
`
	args := ""
	for _, n := range needles {
		args += " " + shq(n[0]) + " " + shq(n[1])
	}
	return guestShell(t, "sudo python3 -c "+shq(script)+args)
}

// scanFilesFor reads every regular file under root (no link followed) and returns how many it
// read, their bytes, and for each needle the files that hold it.
func scanFilesFor(t *testing.T, root string, needles ...[]byte) (files int, size int64, hits [][]string) {
	t.Helper()
	hits = make([][]string, len(needles))
	longest := 0
	for _, n := range needles {
		longest = max(longest, len(n))
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		files++
		found := make([]bool, len(needles))
		buf := make([]byte, 8<<20)
		carry := 0
		for {
			n, rerr := f.Read(buf[carry:])
			size += int64(n)
			for i, needle := range needles {
				if !found[i] && bytes.Contains(buf[:carry+n], needle) {
					found[i] = true
					hits[i] = append(hits[i], path)
				}
			}
			if rerr == io.EOF {
				return nil
			}
			if rerr != nil {
				return rerr
			}
			// Keep the last bytes: a needle across two reads is still found.
			keep := min(longest-1, carry+n)
			copy(buf, buf[carry+n-keep:carry+n])
			carry = keep
		}
	})
	if err != nil {
		t.Fatalf("scanning %s: %v", root, err)
	}
	return files, size, hits
}

// Two processes of one session with secrets (issue 25), here two `limactl mcp shell` at once,
// the second binding one secret more (another host: the session's certificate is widened for
// the same key): both give the agent the same placeholder (kept in the session's host state);
// each listens at a relay socket of its own in the guest. After the second set up, the first
// one's agent, still holding the placeholder it got, reaches the fake api.anthropic.com with
// the value (through the newest relay); after the second ended, it still does, through its
// own relay, whose leaves the guest still trusts (once, the second's socket was the only one
// and its end left the first one's agent with a 502).
func TestSecretsTwoProcessesShare(t *testing.T) {
	const value = "sk-ant-api03-e2eTWO4K8value-0123456789abcdef"
	prov := startFakeProvider(t, value, "extra.example")
	pln, caFile := prov.ln, prov.caFile

	dir := homeWorkdir(t)
	mustT(t, os.WriteFile(filepath.Join(dir, "main.txt"), []byte("one\n"), 0o644))
	_ = os.Chown(filepath.Join(dir, "main.txt"), vmUID(t), vmGID(t))
	discardOnCleanup(t, dir)
	env := []string{"ANTHROPIC_API_KEY=" + value, "EXTRA_KEY=" + value,
		secrets.TestUpstreamEnv + "=api.anthropic.com:443=" + pln.Addr().String() + ",extra.example:443=" + pln.Addr().String(),
		secrets.TestCAEnv + "=" + caFile}
	// The agents wait for files the test makes in the guest: root's, in /var/lib (the agent
	// can look, not make them; not /run, an empty tmpfs in the agent's mount namespace).
	const goFirst, goAgain, goEnd = "/var/lib/limactl-mcp-e2e-two-go", "/var/lib/limactl-mcp-e2e-two-again", "/var/lib/limactl-mcp-e2e-two-end"
	flags := goFirst + " " + goAgain + " " + goEnd
	guestShell(t, "sudo rm -f "+flags)
	t.Cleanup(func() { guestShell(t, "sudo rm -f "+flags) })
	request := `curl -sS --max-time 60 -H "x-api-key: $ANTHROPIC_API_KEY" https://api.anthropic.com/v1/models; echo`
	extra := `curl -sS --max-time 60 -H "x-api-key: $EXTRA_KEY" https://extra.example/v1/models; echo`
	wait := func(flag string) string {
		return `n=0; while [ ! -e ` + flag + ` ] && [ $n -lt 300 ]; do sleep 1; n=$((n+1)); done`
	}
	start := func(name, script string, secretFlags ...string) (<-chan struct{}, *lockedBuffer) {
		args := append([]string{"--network=allow:api.anthropic.com"}, secretFlags...)
		args = append(args, "--no-review", instanceName, "--", "sh", "-c", script)
		cmd := mcpShellCmd(t, dir, env, args...)
		var stdout, stderr lockedBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		mustT(t, cmd.Start())
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			guestShell(t, "sudo touch "+flags)
			select {
			case <-exited:
			case <-time.After(3 * time.Minute):
				cmd.Process.Kill()
				<-exited
			}
			t.Logf("%s stdout:\n%s\nstderr:\n%s", name, stdout.String(), stderr.String())
		})
		return exited, &stdout
	}
	waitFor := func(what string, buf *lockedBuffer, want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for !strings.Contains(buf.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no %q within 5 min:\n%s", what, want, buf.String())
			}
			time.Sleep(time.Second)
		}
	}
	// The first: its placeholder, then (once the second is set up) a request with it, then
	// (once the second has ended) another.
	_, firstOut := start("first", `echo "PLACEHOLDER=$ANTHROPIC_API_KEY"; `+wait(goFirst)+`; printf "FIRST "; `+request+`; echo FIRST-MID; `+wait(goAgain)+`; printf "AGAIN "; `+request+`; echo FIRST-DONE`,
		"--secret", "ANTHROPIC_API_KEY")
	waitFor("the first shell", firstOut, "PLACEHOLDER=")
	// The second: set up after the first, its requests, and it stays until the first's first
	// request is done.
	second, secondOut := start("second", `echo "PLACEHOLDER=$ANTHROPIC_API_KEY"; printf "SECOND "; `+request+`; printf "EXTRA "; `+extra+`; `+wait(goEnd)+`; echo SECOND-DONE`,
		"--secret", "ANTHROPIC_API_KEY", "--secret", "EXTRA_KEY@extra.example")
	waitFor("the second shell", secondOut, "EXTRA ")
	waitFor("the second shell", secondOut, "\n")
	guestShell(t, "sudo touch "+goFirst)
	waitFor("the first shell", firstOut, "FIRST-MID")
	guestShell(t, "sudo touch "+goEnd)
	waitFor("the second shell", secondOut, "SECOND-DONE")
	select {
	case <-second:
	case <-time.After(2 * time.Minute):
		t.Fatal("the second shell did not end")
	}
	guestShell(t, "sudo touch "+goAgain)
	waitFor("the first shell", firstOut, "FIRST-DONE")

	ph := regexp.MustCompile(`PLACEHOLDER=(\S+)`)
	first, secondPh := ph.FindStringSubmatch(firstOut.String()), ph.FindStringSubmatch(secondOut.String())
	if first == nil || secondPh == nil || first[1] != secondPh[1] || !strings.HasPrefix(first[1], "sk-ant-api03-"+secrets.PlaceholderMark) {
		t.Errorf("placeholders: first %v, second %v: want the same one", first, secondPh)
	}
	if !strings.Contains(secondOut.String(), "SECOND PROVIDER key-ok=true") {
		t.Errorf("the second shell's agent did not reach the provider with the value")
	}
	if !strings.Contains(secondOut.String(), "EXTRA PROVIDER key-ok=true") {
		t.Errorf("the second shell's agent did not reach its own bound host (extra.example) with the value")
	}
	if !strings.Contains(firstOut.String(), "FIRST PROVIDER key-ok=true") {
		t.Errorf("the first shell's agent, after the second set up, did not reach the provider with the value")
	}
	if !strings.Contains(firstOut.String(), "AGAIN PROVIDER key-ok=true") {
		t.Errorf("the first shell's agent, after the second ended, did not reach the provider with the value (through its own relay)")
	}
	if strings.Contains(firstOut.String()+secondOut.String(), value) {
		t.Errorf("the value reached an agent's output")
	}
}
