//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
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
