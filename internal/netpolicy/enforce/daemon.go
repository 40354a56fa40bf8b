package enforce

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The proxy's port is never free while an agent could bind it (Lima's boot script sets
// net.ipv4.ip_unprivileged_port_start=0, so a port below 1024 is not root's by itself):
// systemd (pid 1) binds it from persistent units, at boot before any user's process, and holds
// the listening sockets for ever; the proxy service gets them passed in (socket activation). A
// proxy crash, a restart or an upgrade (the service's command changes) leaves the sockets in pid
// 1's hands. ensure then asks the kernel, not the socket, who listens there.

const (
	// proxyUnit is the name of the systemd units (.socket, .service) of the proxy.
	proxyUnit = "limactl-mcp-netproxy"
	// systemdUnitDir is where the persistent units are written.
	systemdUnitDir = "/etc/systemd/system"
	// transientUnitFile is the unit an earlier version started with systemd-run: it holds the
	// port in a process of its own, and is stopped once on the way to the units above.
	transientUnitFile = "/run/systemd/transient/" + proxyUnit + ".service"
)

// RunProxy is the daemon: it serves on the sockets systemd passes in (or, run by hand or in a
// test, listens on the layout's addresses itself), follows the kernel log for refused packets,
// and serves until ctx ends.
func RunProxy(ctx context.Context, layout Layout) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("net proxy must run as root (it reads every agent's policy and writes their logs)")
	}
	listeners, err := systemdListeners()
	if err != nil {
		return err
	}
	if listeners == nil {
		if listeners, err = listenAll(layout.ProxyAddrs); err != nil {
			return err
		}
	}
	p := NewProxy(layout)
	go func() {
		if err := p.followKmsg(ctx, "/dev/kmsg"); err != nil {
			fmt.Fprintf(os.Stderr, "limactl-mcp netproxy: not following /dev/kmsg, so refused direct connections are not logged: %v\n", err)
		}
	}()
	return p.Serve(ctx, listeners)
}

// listenAll listens on every address (a guest without IPv6 loopback does without it).
func listenAll(addrs []string) ([]net.Listener, error) {
	var listeners []net.Listener
	for _, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if len(listeners) > 0 && isIPv6(addr) {
				continue
			}
			for _, l := range listeners {
				l.Close()
			}
			return nil, fmt.Errorf("listening on %s: %w", addr, err)
		}
		listeners = append(listeners, ln)
	}
	return listeners, nil
}

// systemdListeners takes the listening sockets systemd passed (LISTEN_PID, LISTEN_FDS: fds from
// 3 on); nil when it passed none. Hand-written rather than coreos/go-systemd's activation,
// whose package links crypto/tls into the runner for the 20 lines it would save.
func systemdListeners() ([]net.Listener, error) {
	pid, fds := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS")
	os.Unsetenv("LISTEN_PID")
	os.Unsetenv("LISTEN_FDS")
	os.Unsetenv("LISTEN_FDNAMES")
	if pid == "" || fds == "" || pid != strconv.Itoa(os.Getpid()) {
		return nil, nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 1 || n > 16 {
		return nil, fmt.Errorf("LISTEN_FDS=%q from systemd: not 1 to 16 sockets", fds)
	}
	var listeners []net.Listener
	for fd := 3; fd < 3+n; fd++ {
		syscall.CloseOnExec(fd)
		f := os.NewFile(uintptr(fd), "systemd socket "+strconv.Itoa(fd))
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return nil, fmt.Errorf("socket %d from systemd: %w", fd, err)
		}
		listeners = append(listeners, ln)
	}
	return listeners, nil
}

func isIPv6(addr string) bool { return len(addr) > 0 && addr[0] == '[' }

// proxyHealth asks the proxy at addr which binary it is, for a person's diagnosis (see Health):
// ok is false when nothing answers as our proxy.
func proxyHealth(ctx context.Context, addr string) (Health, bool) {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Health{}, false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "GET "+healthPath+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		return Health{}, false
	}
	br := bufio.NewReader(io.LimitReader(c, 8192))
	resp, err := readResponseHead(br)
	if err != nil || !strings.HasPrefix(resp.StatusLine, "HTTP/1.1 200 ") {
		return Health{}, false
	}
	var h Health
	if json.NewDecoder(br).Decode(&h) != nil || h.Exe == "" {
		return Health{}, false
	}
	return h, true
}

func hasSystemd() bool {
	st, err := os.Stat("/run/systemd/system")
	return err == nil && st.IsDir()
}

// proxyKeeper puts the proxy's units in place and proves who holds its port. Its parts are
// fields so that a test on a host without systemd plays systemd's part.
type proxyKeeper struct {
	layout  Layout
	exe     string // the runner, root's, at its verified path
	unitDir string
	// holder is the process whose descriptors must hold every listening socket: systemd, pid 1.
	holder int
	// systemctl runs systemctl with args.
	systemctl func(ctx context.Context, args ...string) error
	// killUID ends every process of an agent user (by uid) that took the port.
	killUID func(ctx context.Context, uid int) error
	// migrate stops a proxy an earlier version started outside the units (nil: none).
	migrate func(ctx context.Context) error
}

// ensureProxy makes sure systemd holds the proxy's port for this runner's proxy.
func ensureProxy(ctx context.Context, layout Layout) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the runner's own path: %w", err)
	}
	if !hasSystemd() {
		return errors.New("a network policy needs systemd in the guest: systemd holds the proxy's port so that no agent can take it between restarts (every Lima image but Alpine runs systemd)")
	}
	k := &proxyKeeper{
		layout: layout, exe: exe, unitDir: systemdUnitDir, holder: 1,
		systemctl: runSystemctl,
		killUID: func(ctx context.Context, uid int) error {
			return killUserProcesses(ctx, strconv.Itoa(uid))
		},
		migrate: stopTransientProxy,
	}
	return k.ensure(ctx)
}

func runSystemctl(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// stopTransientProxy stops the proxy an earlier version ran with systemd-run under the same
// unit name, which would hide the persistent unit.
func stopTransientProxy(ctx context.Context) error {
	if _, err := os.Lstat(transientUnitFile); err != nil {
		return nil
	}
	_ = runSystemctl(ctx, "stop", proxyUnit+".service")
	if err := os.Remove(transientUnitFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the old proxy's unit: %w", err)
	}
	return nil
}

// safeExe is what a unit's ExecStart may name without quoting: the runner's path is
// /usr/local/libexec/limactl-mcp/runner-ID.
var safeExe = regexp.MustCompile(`^/[A-Za-z0-9/._-]+$`)

func (k *proxyKeeper) socketUnit() string {
	var b strings.Builder
	b.WriteString("# Written by limactl-mcp (the runner's net ensure): systemd holds the network policy\n")
	b.WriteString("# proxy's port from boot on, so that no agent user can take it while the proxy restarts.\n")
	b.WriteString("[Unit]\nDescription=limactl-mcp network policy proxy socket\n\n[Socket]\n")
	for _, a := range k.layout.ProxyAddrs {
		b.WriteString("ListenStream=" + a + "\n")
	}
	// Never close the sockets because the service failed or restarted too often.
	b.WriteString("TriggerLimitIntervalSec=0\nBacklog=4096\n\n[Install]\nWantedBy=sockets.target\n")
	return b.String()
}

func (k *proxyKeeper) serviceUnit() string {
	return "# Written by limactl-mcp (the runner's net ensure).\n" +
		"[Unit]\nDescription=limactl-mcp network policy proxy\n" +
		"Requires=" + proxyUnit + ".socket\nAfter=" + proxyUnit + ".socket\n" +
		"StartLimitIntervalSec=0\n\n" +
		"[Service]\nExecStart=" + k.exe + " net proxy\nRestart=always\nRestartSec=1\n"
}

func (k *proxyKeeper) unitPath(suffix string) string {
	return filepath.Join(k.unitDir, proxyUnit+suffix)
}

// ensure writes the units (a new runner: the service's command changes and only the service
// restarts), starts what is not running, and proves the listeners are root's, held by systemd.
func (k *proxyKeeper) ensure(ctx context.Context) error {
	if !safeExe.MatchString(k.exe) {
		return fmt.Errorf("the runner's path %q cannot go in a systemd unit", k.exe)
	}
	if k.migrate != nil {
		if err := k.migrate(ctx); err != nil {
			return err
		}
	}
	socketChanged, err := writeFileIfChanged(k.unitPath(".socket"), []byte(k.socketUnit()), 0o644)
	if err != nil {
		return fmt.Errorf("writing the proxy's socket unit: %w", err)
	}
	serviceChanged, err := writeFileIfChanged(k.unitPath(".service"), []byte(k.serviceUnit()), 0o644)
	if err != nil {
		return fmt.Errorf("writing the proxy's service unit: %w", err)
	}
	if socketChanged || serviceChanged {
		if err := k.systemctl(ctx, "daemon-reload"); err != nil {
			return err
		}
	}
	if socketChanged {
		if err := k.systemctl(ctx, "enable", proxyUnit+".socket"); err != nil {
			return err
		}
	}
	var last error
	for round := 0; round < 3; round++ {
		check, err := checkProxyListeners(k.layout.ProxyAddrs, k.holder)
		if err != nil {
			return err
		}
		if check.ok() {
			if serviceChanged {
				// The new runner's proxy; the sockets stay with systemd.
				if err := k.systemctl(ctx, "restart", proxyUnit+".service"); err != nil {
					return err
				}
				serviceChanged = false
			}
			return nil
		}
		last = check.err(k.layout)
		agents, err := k.agentUIDs()
		if err != nil {
			return err
		}
		for _, s := range check.foreign {
			if s.UID == 0 {
				return last // a root process of something else: not ours to end
			}
			if !agents[int(s.UID)] {
				return fmt.Errorf("%w; uid %d is not an agent user's, so it was left alone: end it, then connect again", last, s.UID)
			}
		}
		for _, s := range check.foreign {
			if err := k.killUID(ctx, int(s.UID)); err != nil {
				return fmt.Errorf("%w; ending the processes of uid %d: %v", last, s.UID, err)
			}
		}
		// systemd could not bind a socket that an agent held: start it again (when systemd
		// holds them all, this changes nothing), then the service.
		_ = k.systemctl(ctx, "reset-failed", proxyUnit+".socket", proxyUnit+".service")
		if err := k.systemctl(ctx, "start", proxyUnit+".socket"); err != nil {
			last = fmt.Errorf("%w; %v", last, err)
			continue
		}
		if err := k.systemctl(ctx, "start", proxyUnit+".service"); err != nil {
			last = fmt.Errorf("%w; %v", last, err)
		}
	}
	return fmt.Errorf("%w (see systemctl status %s.socket %s.service)", last, proxyUnit, proxyUnit)
}

// agentUIDs are the uids of the policy files: the users whose processes ensure may end.
func (k *proxyKeeper) agentUIDs() (map[int]bool, error) {
	users, _, err := readAllPolicies(k.layout.ConfigDir)
	if err != nil {
		return nil, err
	}
	uids := map[int]bool{}
	for _, u := range users {
		if u.UID > 0 {
			uids[u.UID] = true
		}
	}
	return uids, nil
}

// listenerCheck is who listens on the proxy's addresses, as the kernel says.
type listenerCheck struct {
	missing []string     // proxy addresses no good listener covers
	foreign []diagSocket // listeners that are not root's in the holder's hands
}

func (c listenerCheck) ok() bool { return len(c.missing) == 0 && len(c.foreign) == 0 }

func (c listenerCheck) err(l Layout) error {
	var parts []string
	for _, s := range c.foreign {
		parts = append(parts, fmt.Sprintf("%s is held by uid %d, not by systemd for root", s.Local, s.UID))
	}
	if len(c.missing) > 0 {
		parts = append(parts, "nothing listens on "+strings.Join(c.missing, ", "))
	}
	return fmt.Errorf("the network proxy's port cannot be trusted: %s", strings.Join(parts, "; "))
}

// checkProxyListeners asks the kernel (sock_diag) for every listening socket that would take a
// connection to one of addrs (the address itself, a wildcard of the port, an IPv4-mapped one):
// each must be root's and be one of holder's descriptors (compared by socket inode with
// /proc/HOLDER/fd), and each address must have one.
func checkProxyListeners(addrs []string, holder int) (listenerCheck, error) {
	var want []net.TCPAddr
	for _, a := range addrs {
		ta, err := net.ResolveTCPAddr("tcp", a)
		if err != nil || ta.IP == nil {
			return listenerCheck{}, fmt.Errorf("proxy address %q: %v", a, err)
		}
		want = append(want, *ta)
	}
	var socks []diagSocket
	ports := map[int]bool{}
	for _, w := range want {
		if ports[w.Port] {
			continue
		}
		ports[w.Port] = true
		got, err := listeners(uint16(w.Port))
		if err != nil {
			return listenerCheck{}, fmt.Errorf("asking the kernel who listens on the proxy's port: %w", err)
		}
		socks = append(socks, got...)
	}
	var held map[uint32]bool
	var err error
	var c listenerCheck
	covered := make([]bool, len(want))
	for _, s := range socks {
		ip := net.IP(s.Local.Addr().AsSlice())
		relevant := false
		for i, w := range want {
			if int(s.Local.Port()) != w.Port {
				continue
			}
			if ip.Equal(w.IP) {
				relevant = true
				covered[i] = true // marked good below, or the check fails anyway
			} else if ip.IsUnspecified() {
				relevant = true
			}
		}
		if !relevant {
			continue
		}
		if held == nil {
			if held, err = socketInodes(holder); err != nil {
				return listenerCheck{}, err
			}
		}
		if s.UID != 0 || !held[s.Inode] {
			c.foreign = append(c.foreign, s)
		}
	}
	for i, ok := range covered {
		if !ok {
			c.missing = append(c.missing, addrs[i])
		}
	}
	return c, nil
}

// socketInodes are the inodes of the sockets among pid's descriptors ("socket:[N]" links).
func socketInodes(pid int) (map[uint32]bool, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the descriptors of pid %d: %w", pid, err)
	}
	inodes := map[uint32]bool{}
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if rest, ok := strings.CutPrefix(link, "socket:["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 32); err == nil {
				inodes[uint32(n)] = true
			}
		}
	}
	return inodes, nil
}
