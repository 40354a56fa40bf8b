package netpolicy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// proxyUnit is the systemd unit the proxy runs in, where systemd is there.
const proxyUnit = "limactl-mcp-netproxy"

// RunProxy is the daemon: it listens on the layout's addresses, follows the kernel log for
// refused packets, and serves until ctx ends.
func RunProxy(ctx context.Context, layout Layout) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("net proxy must run as root (it reads every agent's policy and writes their logs)")
	}
	var listeners []net.Listener
	for _, addr := range layout.ProxyAddrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if len(listeners) > 0 && isIPv6(addr) {
				continue // a guest without IPv6 loopback: the IPv4 listener is enough
			}
			for _, l := range listeners {
				l.Close()
			}
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
		listeners = append(listeners, ln)
	}
	p := NewProxy(layout)
	go func() {
		if err := p.followKmsg(ctx, "/dev/kmsg"); err != nil {
			fmt.Fprintf(os.Stderr, "limactl-mcp netproxy: not following /dev/kmsg, so refused direct connections are not logged: %v\n", err)
		}
	}()
	return p.Serve(ctx, listeners)
}

func isIPv6(addr string) bool { return len(addr) > 0 && addr[0] == '[' }

// proxyHealth asks the proxy at addr who it is; ok is false when nothing answers as our proxy.
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
	if json.NewDecoder(br).Decode(&h) != nil || h.PID <= 0 {
		return Health{}, false
	}
	return h, true
}

// ensureProxy makes sure the proxy answers and is this binary (after an upgrade, the runner is
// at a new path: the old daemon is replaced). The daemon outlives the ssh session: a systemd
// unit where systemd runs, else a process in a session of its own.
func ensureProxy(ctx context.Context, layout Layout) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the runner's own path: %w", err)
	}
	h, ok := proxyHealth(ctx, layout.ProxyAddr())
	if ok && h.Exe == exe {
		return nil
	}
	if ok {
		stopProxy(ctx, h.PID)
	}
	if err := startProxy(ctx, exe); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if h, ok := proxyHealth(ctx, layout.ProxyAddr()); ok && h.Exe == exe {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the network proxy did not answer on %s within 5 s of starting it (see journalctl -u %s, or run %s net proxy as root to see why)", layout.ProxyAddr(), proxyUnit, exe)
}

func hasSystemd() bool {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return false
	}
	_, err := findTool("systemd-run")
	return err == nil
}

// stopProxy stops an old daemon: its unit, or its process.
func stopProxy(ctx context.Context, pid int) {
	if hasSystemd() {
		_ = exec.CommandContext(ctx, "systemctl", "stop", proxyUnit).Run()
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 40 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func startProxy(ctx context.Context, exe string) error {
	if hasSystemd() {
		// A unit left failed or still loaded from an earlier start would make systemd-run refuse the name.
		_ = exec.CommandContext(ctx, "systemctl", "stop", proxyUnit).Run()
		_ = exec.CommandContext(ctx, "systemctl", "reset-failed", proxyUnit).Run()
		out, err := exec.CommandContext(ctx, "systemd-run", "--unit="+proxyUnit, "--description=limactl-mcp network policy proxy",
			"--property=Restart=always", "--property=RestartSec=1", "--collect", exe, "net", "proxy").CombinedOutput()
		if err != nil {
			return fmt.Errorf("starting the network proxy with systemd-run: %v: %s", err, out)
		}
		return nil
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, "net", "proxy")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the network proxy: %w", err)
	}
	return cmd.Process.Release()
}
