//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runnerSSHD is the pid of the guest sshd process that serves the connection the server's
// runner runs on: the runner is the parent of the command, and its parent is that sshd.
const runnerSSHD = `awk '{print $4}' /proc/$PPID/stat`

// masterSSHD is the same for `limactl shell` (Lima's own path through the instance's
// ControlMaster): the parent of its shell.
const masterSSHD = `echo $PPID`

// TestServeRidesControlMaster: a new server reaches the guest through the instance's
// ControlMaster (the ssh.sock Lima's host agent keeps), not a connection of its own. Its log
// says so, and the guest agrees: the runner runs under the very sshd process that serves
// `limactl shell`, so the guest's sshd saw no new connection, no new authentication.
func TestServeRidesControlMaster(t *testing.T) {
	s := startServer(t, nil, "limactl-mcp", "serve", "--debug", instanceName)
	ours := strings.TrimSpace(shellOK(t, s.Session, "/", runnerSSHD))
	lima := strings.TrimSpace(guestShell(t, masterSSHD))
	if !strings.Contains(s.Stderr.String(), "via=controlmaster") {
		t.Errorf("the server did not say it connected through the ControlMaster:\n%s", s.Stderr.String())
	}
	t.Logf("server log:\n%s", s.Stderr.String())
	if ours == "" || ours != lima {
		t.Errorf("the runner's sshd is pid %q, `limactl shell`'s is %q: want the same connection", ours, lima)
	}
	// The file tools ride it too.
	if res, text := callTool(t, s.Session, "list_directory", map[string]any{"path": "/"}); res.IsError {
		t.Fatalf("list_directory(/): %s", text)
	}

	// Meanwhile the server makes a connection of its own and moves to it (a long-lived server
	// must not hold sessions of the master's connection: sshd allows 10, and `limactl shell`
	// needs them); later calls run there.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(s.Stderr.String(), "handoff=true") {
		if time.Now().After(deadline) {
			t.Fatalf("no handoff to a connection of its own within a minute:\n%s", s.Stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	after := strings.TrimSpace(shellOK(t, s.Session, "/", runnerSSHD))
	if after == "" || after == lima {
		t.Errorf("after the handoff the runner's sshd is pid %q, `limactl shell`'s %q: want a connection of its own", after, lima)
	}
	if res, text := callTool(t, s.Session, "read_file", map[string]any{"path": "/etc/hostname"}); res.IsError {
		t.Fatalf("read_file after the handoff: %s", text)
	}
	// Once idle (after a grace period of 30 s), the sessions on the master end: the first
	// runner is gone from the guest.
	m := regexp.MustCompile(`msg="guest runner started" pid=(\d+)`).FindStringSubmatch(s.Stderr.String())
	if m == nil {
		t.Fatalf("no runner pid in the log:\n%s", s.Stderr.String())
	}
	deadline = time.Now().Add(90 * time.Second)
	for !strings.Contains(s.Stderr.String(), "sessions retired") {
		if time.Now().After(deadline) {
			t.Fatalf("the master's sessions were not retired:\n%s", s.Stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if got := strings.TrimSpace(guestShell(t, "kill -0 "+m[1]+" 2>/dev/null && echo alive || echo gone")); got != "gone" {
		t.Errorf("the runner on the master's connection (pid %s) is %s after its retirement", m[1], got)
	}
	shellOK(t, s.Session, "/", "true")
}

// TestServeWithoutControlMaster: with no master on the instance's socket (a socket left behind
// by a master that died, then none at all), the server makes a connection of its own and every
// tool works; a server started once the master is back rides it again.
func TestServeWithoutControlMaster(t *testing.T) {
	dir := sharedDir(t) // before the master goes: it uses `limactl shell`
	sock := filepath.Join(vm.LimaHome, instanceName, "ssh.sock")
	kept := sock + ".kept-by-test"
	if err := os.Rename(sock, kept); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		_ = os.Remove(sock)
		if err := os.Rename(kept, sock); err != nil {
			t.Errorf("putting the instance's ssh.sock back: %v", err)
		}
	}
	t.Cleanup(restore)
	// (No guestShell while the master is away: `limactl shell` would make a new one.)

	check := func(t *testing.T, label string) {
		t.Helper()
		t0 := time.Now()
		s := startServerIn(t, dir, nil, "limactl-mcp", "serve", "--debug", instanceName)
		shellOK(t, s.Session, "/", "true")
		t.Logf("%s: connect and first call in %s", label, time.Since(t0).Round(time.Millisecond))
		if res, text := callTool(t, s.Session, "read_file", map[string]any{"path": "/etc/hostname"}); res.IsError {
			t.Errorf("%s: read_file: %s", label, text)
		}
		if log := s.Stderr.String(); !strings.Contains(log, "via=ssh") || strings.Contains(log, "via=controlmaster") {
			t.Errorf("%s: the server did not say it connected directly:\n%s", label, log)
		}
		if log := s.Stderr.String(); strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=WARN") {
			t.Errorf("%s: the fallback logged a warning or an error:\n%s", label, log)
		}
	}
	t.Run("StaleSocket", func(t *testing.T) {
		// A socket nobody listens on, owned by the instance's user, as a killed master leaves.
		mk := vm.Command(ctxT(t, time.Minute), "python3", "-c",
			"import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])", sock)
		if out, err := mk.CombinedOutput(); err != nil {
			t.Fatalf("making a stale socket: %v %s", err, out)
		}
		check(t, "stale socket")
		_ = os.Remove(sock)
	})
	t.Run("NoSocket", func(t *testing.T) {
		check(t, "no socket")
	})
	restore()
	t.Run("MasterBack", func(t *testing.T) {
		s := startServerIn(t, dir, nil, "limactl-mcp", "serve", "--debug", instanceName)
		shellOK(t, s.Session, "/", "true")
		if !strings.Contains(s.Stderr.String(), "via=controlmaster") {
			t.Errorf("the master is back, yet the server did not ride it:\n%s", s.Stderr.String())
		}
	})
}

// TestServeExitsWhenTheClientGoes: a client that initializes and goes away at once (a health
// check such as `claude mcp list`) finds the server gone within moments, while its connect and
// staging are in flight, with no ERROR line; the next server stages the whole tree.
func TestServeExitsWhenTheClientGoes(t *testing.T) {
	files := map[string]string{}
	for i := range 3000 {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%30, i)] = strings.Repeat("x", 1000)
	}
	dir := project(t, files)
	for i := range 3 {
		cmd := vm.Command(ctxT(t, 2*time.Minute), "limactl-mcp", "serve", "--debug", instanceName)
		cmd.Dir = dir
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		stdin, err := cmd.StdinPipe()
		mustT(t, err)
		stdout, err := cmd.StdoutPipe()
		mustT(t, err)
		mustT(t, cmd.Start())
		_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		mustT(t, err)
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
			t.Fatalf("initialize: %q %v\n%s", line, err, stderr.String())
		}
		t0 := time.Now()
		_ = stdin.Close()
		err = cmd.Wait()
		took := time.Since(t0)
		t.Logf("probe %d: stdin closed → exited in %s", i, took.Round(time.Millisecond))
		if err != nil {
			t.Errorf("probe %d: exit %v\n%s", i, err, stderr.String())
		}
		// 100 ms is the target; runuser and an emulated guest on a busy host add noise.
		if took > time.Second {
			t.Errorf("probe %d: the server took %s to exit after stdin closed\n%s", i, took, stderr.String())
		}
		if strings.Contains(stderr.String(), "level=ERROR") {
			t.Errorf("probe %d: an ERROR line on a client going away:\n%s", i, stderr.String())
		}
	}
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	if got := strings.TrimSpace(shellOK(t, s.Session, dir, "find . -type f | wc -l")); got != "3000" {
		t.Errorf("the staged copy has %s files, want 3000\n%s", got, s.Stderr.String())
	}
}
