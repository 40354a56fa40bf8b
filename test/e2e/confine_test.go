//go:build e2e

package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Issue 22: the agent under a network policy against the guest's own daemons and paths.

// dnsServer answers A queries for names under .lmcptest (10.55.0.1) on the host's loopback,
// UDP, and records every name it is asked: what reached it. A hand-written responder of a
// few lines (one question, one answer) rather than a dependency for the tests.
type dnsServer struct {
	port  int
	mu    sync.Mutex
	names []string
}

func startDNSServer(t *testing.T) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	s := &dnsServer{port: pc.LocalAddr().(*net.UDPAddr).Port}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := s.answer(buf[:n]); reply != nil {
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	return s
}

// answer parses the question of q and builds the reply (nil for what it cannot read).
func (s *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if l > 63 || i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	question := q[12 : i+5]
	name := strings.ToLower(strings.Join(labels, "."))
	s.mu.Lock()
	s.names = append(s.names, name)
	s.mu.Unlock()
	r := make([]byte, 12, 64)
	copy(r, q[:2])
	binary.BigEndian.PutUint16(r[2:], 0x8180) // a response, recursion available, no error
	binary.BigEndian.PutUint16(r[4:], 1)
	r = append(r, question...)
	if qtype == 1 && strings.HasSuffix(name, ".lmcptest") {
		binary.BigEndian.PutUint16(r[6:], 1)
		r = append(r, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 10, 55, 0, 1)
	}
	return r
}

// saw lists the names asked that contain part.
func (s *dnsServer) saw(part string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range s.names {
		if strings.Contains(n, part) {
			out = append(out, n)
		}
	}
	return out
}

// resolverScript asks for NAME-{resolvectl,getent,busctl,varlink}.lmcptest through each way a
// local daemon resolves names for a process: resolvectl (D-Bus to systemd-resolved), getent
// (glibc's nss-resolve, varlink), busctl (the D-Bus system bus, org.freedesktop.resolve1) and
// the varlink socket itself; it prints WAY-OK for each that got an answer.
func resolverScript(name string) string {
	varlink := `import json,socket,sys
s=socket.socket(socket.AF_UNIX); s.settimeout(20)
s.connect("/run/systemd/resolve/io.systemd.Resolve")
s.sendall(json.dumps({"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":sys.argv[1]}}).encode()+b"\0")
a=s.recv(65536)
sys.exit(0 if b"addresses" in a else 1)`
	return strings.Join([]string{
		"timeout 30 resolvectl query " + name + "-resolvectl.lmcptest >/dev/null 2>&1 && echo RESOLVECTL-OK",
		"timeout 30 getent hosts " + name + "-getent.lmcptest >/dev/null 2>&1 && echo GETENT-OK",
		"timeout 30 busctl --system call org.freedesktop.resolve1 /org/freedesktop/resolve1 org.freedesktop.resolve1.Manager ResolveHostname isit 0 " + name + "-busctl.lmcptest 0 0 >/dev/null 2>&1 && echo BUSCTL-OK",
		"timeout 30 python3 -c " + shq(varlink) + " " + name + "-varlink.lmcptest 2>/dev/null && echo VARLINK-OK",
		"true",
	}, "\n")
}

// resolvedOn runs systemd-resolved in the guest until the test ends, as Ubuntu has it
// (/etc/resolv.conf its stub), with a DNS server of the test's on the host's loopback (port)
// as its only upstream. The image has it installed but off, so that every other test keeps
// Lima's DNS.
func resolvedOn(t *testing.T, port int) {
	t.Helper()
	guestShell(t, `set -e
ip=$(getent hosts host.lima.internal | awk '{print $1; exit}')
sudo mkdir -p /etc/systemd/resolved.conf.d
printf '[Resolve]\nDNS=%s:%s\nDomains=~.\nDNSSEC=no\nDNSOverTLS=no\nLLMNR=no\nMulticastDNS=no\nCache=no\n' "$ip" `+strconv.Itoa(port)+` | sudo tee /etc/systemd/resolved.conf.d/lmcp-e2e.conf >/dev/null
[ -e /etc/resolv.conf.lmcp-e2e ] || sudo cp -P /etc/resolv.conf /etc/resolv.conf.lmcp-e2e
sudo systemctl restart systemd-resolved
sudo ln -sf ../run/systemd/resolve/stub-resolv.conf /etc/resolv.conf`)
	t.Cleanup(func() {
		guestShell(t, `sudo systemctl stop systemd-resolved; sudo rm -f /etc/systemd/resolved.conf.d/lmcp-e2e.conf
if [ -e /etc/resolv.conf.lmcp-e2e ]; then sudo rm -f /etc/resolv.conf; sudo mv /etc/resolv.conf.lmcp-e2e /etc/resolv.conf; fi`)
	})
}

// Names resolved for the agent by the guest's own resolver would carry data out whatever the
// firewall says (the daemon, not the agent's uid, sends the packets). On a guest that runs
// systemd-resolved, as Ubuntu (Lima's default image) does, with the Lima user's queries
// reaching a DNS server of the test's on the host's loopback through it, the confined agent's
// fail by every local way, and the server sees none of them.
func TestNetworkPolicyLocalResolver(t *testing.T) {
	if out := guestShell(t, "command -v resolvectl >/dev/null && grep -c '^hosts:.*resolve' /etc/nsswitch.conf || true"); strings.TrimSpace(out) != "1" {
		t.Fatalf("the VM image has no systemd-resolved with nss-resolve (hack/e2e/build-image.sh installs them): %q", out)
	}
	dns := startDNSServer(t)
	resolvedOn(t, dns.port)
	nonce := fmt.Sprintf("n%d", time.Now().UnixNano()%1e9)

	// The Lima user: each way works, and reaches the server (the test can see a leak).
	out := guestShell(t, resolverScript("lima-"+nonce))
	for _, way := range []string{"RESOLVECTL", "GETENT", "BUSCTL", "VARLINK"} {
		if !strings.Contains(out, way+"-OK") {
			t.Fatalf("the Lima user's %s query through systemd-resolved failed (%q): the test could not see a leak", way, out)
		}
	}
	if got := dns.saw("lima-" + nonce); len(got) < 4 {
		t.Fatalf("the server saw %v of the Lima user's 4 queries", got)
	}

	dir := homeWorkdir(t)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--network=none")
	discardOnCleanup(t, dir)
	res, isErr, text := runShell(t, s, resolverScript("agent-"+nonce)+"\necho; ls -A /run; grep NoNewPrivs /proc/self/status; id -G")
	if isErr || res.ExitCode == nil {
		t.Fatalf("run_shell_command: %s", text)
	}
	for _, way := range []string{"RESOLVECTL", "GETENT", "BUSCTL", "VARLINK"} {
		if strings.Contains(res.Stdout, way+"-OK") {
			t.Errorf("the agent resolved a name through %s: %s", way, text)
		}
	}
	if got := dns.saw("agent-" + nonce); len(got) > 0 {
		t.Errorf("the DNS server on the host received the agent's queries: %v", got)
	}
	if !strings.Contains(res.Stdout, "\nlock\nNoNewPrivs:\t1\n") {
		t.Errorf("the agent's /run is not the empty one, or no_new_privs is not set: %q", res.Stdout)
	}
	// A setuid binary gains nothing (no_new_privs): su and sudo run as the agent.
	res, _, text = runShell(t, s, "sudo -n id -u 2>&1; su -c 'id -u' root </dev/null 2>&1; ping -c1 -W2 127.0.0.1 >/dev/null 2>&1 && echo PING-WORKS; true")
	if strings.Contains(res.Stdout, "\n0\n") || strings.HasPrefix(res.Stdout, "0\n") {
		t.Errorf("a setuid binary gave the agent root: %s", text)
	}
}

// Root never follows a link the agent planted in the path of its copy: in a named session (its
// copy in the agent's home), the agent replaces each directory on the way (the staging
// directory, the copy) by a link to a directory of root's outside its tree, to a file, or to
// nothing; the next connect and the next release (back to open) fail, naming the path, and
// nothing outside the agent's tree is made or changes owner.
func TestNetworkPolicySymlinkedParents(t *testing.T) {
	dir := homeWorkdir(t)
	const session = "links"
	network := "--network=allow:allowed.test"
	user := staging.AgentUser(staging.SessionIDOf(dir, session))
	stdout, stderr, code := mcpShell(t, dir, nil, "--session", session, network, "--no-review", instanceName, "--", "pwd")
	if code != 0 {
		t.Fatalf("shell: exit %d: %s", code, stderr)
	}
	copyPath := strings.TrimSpace(stdout)
	stagedDir := path.Dir(copyPath)
	if !strings.HasPrefix(copyPath, "/var/lib/limactl-mcp/agents/"+user+"/") {
		t.Fatalf("the named session's copy is at %q, not in the agent's home", copyPath)
	}
	t.Cleanup(func() {
		if _, stderr, code := plugin(t, dir, "discard", "--session", session, instanceName, "--yes"); code != 0 {
			t.Logf("discarding session %s: %s", session, stderr)
		}
		guestShell(t, "sudo rm -rf /var/tmp/lmcp-e2e-target /var/tmp/lmcp-e2e-target-file")
	})
	// What the links point at: root's, made by the test, with the rest of the copy's path in
	// the directory (so that a path followed through the link would resolve).
	rest := path.Base(copyPath)
	guestShell(t, "sudo rm -rf /var/tmp/lmcp-e2e-target && sudo mkdir -p /var/tmp/lmcp-e2e-target/"+shq(rest)+" && sudo touch /var/tmp/lmcp-e2e-target/keep /var/tmp/lmcp-e2e-target/"+shq(rest)+"/keep /var/tmp/lmcp-e2e-target-file")
	snapshot := func() string {
		return guestShell(t, "sudo find /var/tmp/lmcp-e2e-target /var/tmp/lmcp-e2e-target-file -printf '%p %u:%g %m\\n' | sort")
	}
	before := snapshot()
	targets := map[string]string{"dir": "/var/tmp/lmcp-e2e-target", "file": "/var/tmp/lmcp-e2e-target-file", "dangling": "/var/tmp/lmcp-e2e-target/none/here"}
	cases := 0
	for _, comp := range []string{stagedDir, copyPath} {
		for kind, target := range targets {
			for _, step := range []string{"connect", "release"} {
				name := fmt.Sprintf("%s/%s/%s", path.Base(comp), kind, step)
				// The agent plants the link (it owns its home and the copy).
				guestShell(t, "sudo -n -u "+user+" sh -c "+shq(`mv -- "$1" "$1.away" && ln -s -- "$2" "$1"`)+" sh "+shq(comp)+" "+shq(target))
				var code int
				var stderr string
				if step == "connect" {
					_, stderr, code = mcpShell(t, dir, nil, "--session", session, "--no-review", instanceName, "--", "true")
				} else {
					_, stderr, code = mcpShell(t, dir, nil, "--session", session, "--network=open", "--no-review", instanceName, "--", "true")
				}
				cases++
				if code == 0 || !strings.Contains(stderr, "symbolic link") {
					t.Errorf("%s: exit %d, want a failure naming the link: %s", name, code, stderr)
				}
				if after := snapshot(); after != before {
					t.Errorf("%s: outside the agent's tree changed:\nbefore:\n%s\nafter:\n%s", name, before, after)
					guestShell(t, "sudo rm -rf /var/tmp/lmcp-e2e-target && sudo mkdir -p /var/tmp/lmcp-e2e-target/"+shq(rest)+" && sudo touch /var/tmp/lmcp-e2e-target/keep /var/tmp/lmcp-e2e-target/"+shq(rest)+"/keep /var/tmp/lmcp-e2e-target-file && sudo chown root:root /var/tmp/lmcp-e2e-target-file")
					before = snapshot()
				}
				// Put the tree back (as root: the link is the agent's) for the next case.
				guestShell(t, "sudo rm -f -- "+shq(comp)+" && sudo mv -- "+shq(comp+".away")+" "+shq(comp))
			}
		}
	}
	t.Logf("%d cases", cases)
	// With the links gone, the session works again.
	stdout, stderr, code = mcpShell(t, dir, nil, "--session", session, "--no-review", instanceName, "--", "sh", "-c", "id -un; pwd")
	if code != 0 || stdout != user+"\n"+copyPath+"\n" {
		t.Fatalf("after the links: exit %d, %q, %s", code, stdout, stderr)
	}
}

// Inbound: Lima's port forwarding makes a confined agent's listener on the guest's loopback a
// listener on the host's 127.0.0.1 (kept: the agent's servers are what a person previews);
// status says which ports, in text and --json.
func TestNetworkPolicyInbound(t *testing.T) {
	dir := homeWorkdir(t)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--network=none")
	discardOnCleanup(t, dir)
	port := 18000 + int(time.Now().UnixNano()%1000)
	res, text := callTool(t, s.Session, "run_shell_command", map[string]any{"command": []string{"python3", "-m", "http.server", strconv.Itoa(port), "--bind", "127.0.0.1"}, "directory": s.Dir, "background": true})
	if res.IsError {
		t.Fatalf("run_shell_command in the background: %s", text)
	}
	// Lima's guest agent notices listeners every few seconds.
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	deadline := time.Now().Add(90 * time.Second)
	reached := false
	for time.Now().Before(deadline) {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
		if err == nil {
			resp.Body.Close()
			reached = resp.StatusCode == 200
			if reached {
				break
			}
		}
		time.Sleep(2 * time.Second)
	}
	if !reached {
		t.Errorf("the agent's server on the guest's 127.0.0.1:%d is not reachable from the host's %s (Lima's forwarding, documented as kept)", port, url)
	}
	st := statusOf(t, dir)
	nw, _ := st["network"].(map[string]any)
	ls, _ := nw["listening"].([]any)
	found := false
	for _, l := range ls {
		m, _ := l.(map[string]any)
		if m["proto"] == "tcp" && m["port"] == float64(port) && m["forwarded_to_host"] == true {
			found = true
		}
	}
	if !found {
		t.Errorf("status --json does not list the agent's port %d: %v", port, nw)
	}
	out, _, _ := plugin(t, dir, "status", instanceName)
	if want := fmt.Sprintf("tcp 127.0.0.1:%d (host 127.0.0.1:%d)", port, port); !strings.Contains(out, want) {
		t.Errorf("status does not say %q: %s", want, out)
	}
}
