//go:build linux

package enforce

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSystemd plays systemd's part on a host without it: "start the socket" listens on the
// layout's addresses in this process (the holder) and serves the proxy there; the listeners
// stay until the test ends, whatever is restarted.
type fakeSystemd struct {
	t      *testing.T
	layout Layout
	mu     sync.Mutex
	held   []net.Listener
	calls  []string
	cancel context.CancelFunc
	done   chan error
}

func (f *fakeSystemd) systemctl(ctx context.Context, args ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.Join(args, " "))
	if len(args) == 2 && args[0] == "start" && args[1] == proxyUnit+".socket" && f.held == nil {
		lns, err := listenAll(f.layout.ProxyAddrs)
		if err != nil {
			return fmt.Errorf("socket unit failed: %w", err)
		}
		f.held = lns
		ctx, cancel := context.WithCancel(context.Background())
		f.cancel, f.done = cancel, make(chan error, 1)
		go func() { f.done <- NewProxy(f.layout).Serve(ctx, lns) }()
	}
	return nil
}

func (f *fakeSystemd) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil {
		f.cancel()
		<-f.done
	}
}

// unusedUID is a uid no account has: the impostor runs as it (setpriv), so that ending its
// processes ends nothing of anyone else's.
func unusedUID(t *testing.T) int {
	for uid := 52000 + os.Getpid()%5000; uid < 60000; uid++ {
		if _, err := user.LookupId(strconv.Itoa(uid)); err != nil {
			return uid
		}
	}
	t.Skip("no unused uid")
	return -1
}

// impostorScript listens on 127.0.0.1:PORT and answers every request as the proxy's health
// would, naming a pid (argv[2]) and an exe (argv[3]).
const impostorScript = `
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("listening", flush=True)
body = ('{"pid": %s, "exe": "%s"}' % (sys.argv[2], sys.argv[3])).encode()
while True:
    c, _ = s.accept()
    try:
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    except OSError:
        pass
    c.close()
`

// startImpostor runs the impostor as uid and waits until it listens.
func startImpostor(t *testing.T, uid, port, victim int, exe string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(uid), "--clear-groups",
		systemPython(t), "-c", impostorScript, strconv.Itoa(port), strconv.Itoa(victim), exe)
	cmd.Dir = "/"
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "listening") {
		t.Fatalf("the impostor did not start: %q", buf[:n])
	}
	return cmd, exited
}

// startVictim is a root process whose pid the impostor names.
func startVictim(t *testing.T) (int, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	go func() { cmd.Wait(); close(gone) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-gone
	})
	return cmd.Process.Pid, gone
}

func keeperPrereqs(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the impostor runs as another user")
	}
	systemPython(t)
	for _, tool := range []string{"setpriv", "pkill", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
}

// systemPython is a python3 another user can run (not one under root's home).
func systemPython(t *testing.T) string {
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o001 != 0 {
			return p
		}
	}
	t.Skip("no python3 in /usr/bin for the impostor")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func keeperLayout(t *testing.T, port int) Layout {
	dir := t.TempDir()
	l := Layout{ConfigDir: filepath.Join(dir, "net"), LogDir: filepath.Join(dir, "log"), HomeBase: dir,
		ProxyAddrs: []string{"127.0.0.1:" + strconv.Itoa(port)}}
	if err := ensureRootDir(l.ConfigDir); err != nil {
		t.Fatal(err)
	}
	return l
}

func alive(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// TestEnsureNeverTrustsAnImpostor: an agent user binds the proxy's port while the proxy is
// down (a restart, an upgrade) and answers the health check as the proxy would, naming the pid
// of a root process. ensure must not accept it, must not touch that pid, and ends the agent's
// processes (by its uid, from the policy files) before systemd's socket takes the port.
func TestEnsureNeverTrustsAnImpostor(t *testing.T) {
	keeperPrereqs(t)
	port := freePort(t)
	l := keeperLayout(t, port)
	uid := unusedUID(t)
	writePolicy(t, l, UserPolicy{User: "lmcp-impostor", UID: uid, Policy: "none"})
	victim, victimGone := startVictim(t)
	exe, _ := os.Executable()
	_, impostorGone := startImpostor(t, uid, port, victim, exe)

	// The impostor answers as the proxy would (the old ensure trusted that).
	if h, ok := proxyHealth(context.Background(), l.ProxyAddr()); !ok || h.Exe != exe {
		t.Fatalf("the impostor does not answer the health check: %+v %v", h, ok)
	}
	sd := &fakeSystemd{t: t, layout: l}
	defer sd.stop()
	k := &proxyKeeper{layout: l, exe: "/usr/local/libexec/limactl-mcp/runner-test", unitDir: t.TempDir(), holder: os.Getpid(),
		systemctl: sd.systemctl,
		killUID:   func(ctx context.Context, uid int) error { return killUserProcesses(ctx, strconv.Itoa(uid)) }}
	if err := k.ensure(context.Background()); err != nil {
		t.Fatalf("ensure: %v (systemctl %q)", err, sd.calls)
	}
	select {
	case <-impostorGone:
	case <-time.After(30 * time.Second):
		t.Fatal("the impostor (an agent user's process holding the port) is still running")
	}
	if !alive(victimGone) {
		t.Fatal("the root process whose pid the impostor named was killed")
	}
	check, err := checkProxyListeners(l.ProxyAddrs, os.Getpid())
	if err != nil || !check.ok() {
		t.Fatalf("after ensure, the listeners are not ours: %+v %v", check, err)
	}
	if sd.held == nil {
		t.Fatalf("systemd's socket was never started: %q", sd.calls)
	}
	// And a second ensure, with everything in place, changes nothing.
	before := len(sd.calls)
	if err := k.ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(sd.calls) != before {
		t.Errorf("a second ensure ran systemctl %q", sd.calls[before:])
	}
}

// TestEnsureRefusesAnUnknownHolder: a process of a uid that is no agent's holds the port:
// ensure fails, says who, and ends nothing (neither that process nor the pid it names).
func TestEnsureRefusesAnUnknownHolder(t *testing.T) {
	keeperPrereqs(t)
	port := freePort(t)
	l := keeperLayout(t, port)
	uid := unusedUID(t)
	victim, victimGone := startVictim(t)
	_, impostorGone := startImpostor(t, uid, port, victim, "/usr/local/libexec/limactl-mcp/runner-test")
	sd := &fakeSystemd{t: t, layout: l}
	defer sd.stop()
	killed := false
	k := &proxyKeeper{layout: l, exe: "/usr/local/libexec/limactl-mcp/runner-test", unitDir: t.TempDir(), holder: os.Getpid(),
		systemctl: sd.systemctl,
		killUID:   func(ctx context.Context, uid int) error { killed = true; return nil }}
	err := k.ensure(context.Background())
	if err == nil || !strings.Contains(err.Error(), "held by uid "+strconv.Itoa(uid)) || !strings.Contains(err.Error(), "left alone") {
		t.Fatalf("ensure with a stranger on the port: %v", err)
	}
	if killed || !alive(impostorGone) || !alive(victimGone) {
		t.Fatalf("ensure ended something: kill called %v, holder alive %v, named pid alive %v", killed, alive(impostorGone), alive(victimGone))
	}
}

// TestEnsureRefusesRootListenerNotHeldBySystemd: a root listener that is not among the holder's
// descriptors (the old proxy's own socket, say) is not trusted either.
func TestEnsureRefusesRootListenerNotHeldBySystemd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	check, err := checkProxyListeners([]string{ln.Addr().String()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if check.ok() || len(check.foreign) != 1 || check.foreign[0].UID != 0 {
		t.Fatalf("a root listener outside pid 1's descriptors: %+v", check)
	}
	if check, err := checkProxyListeners([]string{ln.Addr().String()}, os.Getpid()); err != nil || !check.ok() {
		t.Fatalf("our own listener: %+v %v", check, err)
	}
}

func TestProxyUnits(t *testing.T) {
	k := &proxyKeeper{layout: DefaultLayout(), exe: "/usr/local/libexec/limactl-mcp/runner-abc"}
	sock, svc := k.socketUnit(), k.serviceUnit()
	for _, want := range []string{"ListenStream=127.0.0.1:929\n", "ListenStream=[::1]:929\n", "TriggerLimitIntervalSec=0\n", "WantedBy=sockets.target\n"} {
		if !strings.Contains(sock, want) {
			t.Errorf("socket unit lacks %q:\n%s", want, sock)
		}
	}
	for _, want := range []string{"ExecStart=/usr/local/libexec/limactl-mcp/runner-abc net proxy\n", "Requires=limactl-mcp-netproxy.socket\n", "StartLimitIntervalSec=0\n", "Restart=always\n"} {
		if !strings.Contains(svc, want) {
			t.Errorf("service unit lacks %q:\n%s", want, svc)
		}
	}
	k.exe = "/tmp/x y"
	if err := k.ensure(context.Background()); err == nil {
		t.Error("a path with a space went into a unit")
	}
}

// TestEnsureUpgradeRestartsOnlyTheService: a new runner rewrites the service unit and
// restarts the service; the socket (held by systemd) is never restarted or stopped.
func TestEnsureUpgradeRestartsOnlyTheService(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	l := keeperLayout(t, freePort(t))
	sd := &fakeSystemd{t: t, layout: l}
	defer sd.stop()
	k := &proxyKeeper{layout: l, exe: "/usr/local/libexec/limactl-mcp/runner-old", unitDir: t.TempDir(), holder: os.Getpid(),
		systemctl: sd.systemctl, killUID: func(context.Context, int) error { t.Error("nothing to kill"); return nil }}
	if err := k.ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := len(sd.calls)
	k.exe = "/usr/local/libexec/limactl-mcp/runner-new"
	if err := k.ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(sd.calls[before:], "; ")
	if got != "daemon-reload; restart limactl-mcp-netproxy.service" {
		t.Errorf("upgrade ran: %s", got)
	}
	data, _ := os.ReadFile(k.unitPath(".service"))
	if !strings.Contains(string(data), "runner-new net proxy") {
		t.Errorf("service unit after the upgrade:\n%s", data)
	}
}

// TestListenersByPort: the kernel filters the listeners by port (the bytecode filter is taken,
// not the fallback), so a flood of listeners on other ports is not even sent.
func TestListenersByPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	req := inetDiagRequest(2 /* AF_INET */, 1<<tcpListen, netip.AddrPort{}, netip.AddrPort{})
	socks, err := sockDiag(append(req, portFilter(port)...), true)
	if err != nil || len(socks) != 1 || socks[0].Local.Port() != port || int(socks[0].UID) != os.Geteuid() {
		t.Fatalf("filtered dump: %+v %v", socks, err)
	}
	all, err := listeners(port)
	if err != nil || len(all) != 1 || all[0].Local.String() != ln.Addr().String() {
		t.Fatalf("listeners(%d): %+v %v", port, all, err)
	}
}
