//go:build e2e

package e2e

// This file's name sorts after every other file of the package, and Go runs a package's tests
// in source order, file by file in name order: TestServeRestart, which stops the VM and starts
// it again (~45-80 s), runs last. Keep it that way (and add no tests after it).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/limavm"
)

// TestServeRestart (keep it LAST: it stops the VM) stops the instance under an open session:
// calls then fail with an error that says so and how to start it; once the instance runs again,
// the same session reconnects by itself. A review applying and a `limactl mcp shell` command
// running when the VM stops lose nothing either.
func TestServeRestart(t *testing.T) {
	t.Cleanup(func() {
		// Whatever happened, leave the VM running for whatever comes next.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if st, err := vm.Status(ctx); err != nil || st != "Running" {
			if _, err := limavm.Boot(ctx, instanceName); err != nil {
				t.Errorf("restarting the VM after the test: %v", err)
			}
		}
	})
	s := startServer(t, nil, "limactl-mcp", "serve", "--debug", instanceName)
	const bootID = "cat /proc/sys/kernel/random/boot_id"
	before := shellOK(t, s.Session, "/", bootID)
	// The file tools use the same connection; make sure it is up before the stop.
	if res, text := callTool(t, s.Session, "list_directory", map[string]any{"path": "/"}); res.IsError {
		t.Fatalf("list_directory(/): %s", text)
	}

	// A session under a network policy: its rules are not kept in the guest across a boot, and
	// must be back before its first command after the restart.
	ndir := homeWorkdir(t)
	ns := startServerIn(t, ndir, nil, "limactl-mcp", "serve", instanceName, "--network=none")
	reachHost := fmt.Sprintf("curl -sS --noproxy '*' --max-time 20 http://host.lima.internal:%d/x 2>&1 && echo REACHED; id -un", hostServer(t))
	if out, _, text := runShell(t, ns, reachHost); !strings.Contains(out.Stdout, "lmcp-") || strings.Contains(out.Stdout, "REACHED") {
		t.Fatalf("policy session before the restart: %s", text)
	}

	// `limactl mcp shell` running a command when the VM stops: it ends (no hang), the host
	// is untouched, and what the command did before the stop is pending after the restart.
	sdir := project(t, map[string]string{"a.txt": "a\n"})
	shell := mcpShellCmd(t, sdir, nil, instanceName, "--", "sh", "-c", "echo before-the-stop > work.txt && sleep 600")
	var shellOut lockedBuffer
	shell.Stdout, shell.Stderr = &shellOut, &shellOut
	mustT(t, shell.Start())
	shellDone := make(chan error, 1)
	go func() { shellDone <- shell.Wait() }()
	for t1 := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		if gp := stagedGuestPath(t, sdir); gp != "" && strings.TrimSpace(guestShell(t, "test -e "+shq(gp+"/work.txt")+" && echo yes || true")) == "yes" {
			break
		}
		if time.Since(t1) > 2*time.Minute {
			t.Fatalf("the shell's command did not write work.txt in the guest:\n%s", shellOut.String())
		}
	}

	// A review applying a large file when the VM stops: it must end with a clear error, write
	// nothing half, and the change must still apply once the VM is back. The stop starts as
	// soon as the file's content is being fetched (the shell above is already running its
	// command), and the file is large enough that the fetch outlasts the stop's first seconds
	// (with 60 MB and the shell started in between, a quiet host finished the apply first).
	const bigSize = 200000000
	rdir := project(t, map[string]string{"keep.txt": "old\n"})
	rs := startServerIn(t, rdir, nil, "limactl-mcp", "serve", instanceName)
	shellOK(t, rs.Session, rdir, fmt.Sprintf("head -c %d /dev/urandom > big.bin && echo new > keep.txt", bigSize))
	review := vm.Command(ctxT(t, 10*time.Minute), "limactl-mcp", "review", instanceName, "--yes")
	review.Dir = rdir
	var reviewOut lockedBuffer
	review.Stdout, review.Stderr = &reviewOut, &reviewOut
	mustT(t, review.Start())
	reviewDone := make(chan error, 1)
	go func() { reviewDone <- review.Wait() }()
	sessions := filepath.Join(vm.LimaHome, instanceName, "limactl-mcp", "sessions")
	t0 := time.Now()
	fetching := false
	for !fetching && time.Since(t0) < 5*time.Minute {
		m, _ := filepath.Glob(filepath.Join(sessions, "*", "backups", "*", "*.after"))
		fetching = len(m) > 0 // the content is being fetched
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("stopping the VM %s after review --yes started (fetching the %d MB file: %v)", time.Since(t0).Round(100*time.Millisecond), bigSize/1000000, fetching)

	t0 = time.Now()
	if err := vm.Stop(ctxT(t, 3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reviewDone:
		t.Logf("review while the VM stopped: %v\n%s", err, reviewOut.String())
		if err == nil {
			t.Errorf("review --yes exited 0 although the VM stopped during its apply:\n%s", reviewOut.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("review hangs once the VM is stopped:\n%s", reviewOut.String())
	}
	select {
	case err := <-shellDone:
		t.Logf("limactl mcp shell while the VM stopped: %v\n%s", err, shellOut.String())
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 255 {
			t.Errorf("limactl mcp shell whose VM stopped under its command: %v, want exit 255:\n%s", err, shellOut.String())
		}
		for _, want := range []string{"the connection to the guest was lost", "nothing was applied to the host", "limactl mcp review " + instanceName} {
			if !strings.Contains(shellOut.String(), want) {
				t.Errorf("limactl mcp shell whose VM stopped does not say %q:\n%s", want, shellOut.String())
			}
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("limactl mcp shell hangs once the VM is stopped:\n%s", shellOut.String())
	}
	if _, err := os.Stat(filepath.Join(sdir, "work.txt")); err == nil {
		t.Errorf("work.txt reached the host without a review")
	}
	if fi, err := os.Stat(filepath.Join(rdir, "big.bin")); err == nil && fi.Size() != bigSize {
		t.Errorf("big.bin half-written on the host: %d bytes", fi.Size())
	}
	if got := readHost(t, filepath.Join(rdir, "keep.txt")); got != "old\n" && got != "new\n" {
		t.Errorf("keep.txt: %q", got)
	}
	t.Logf("limactl stop: %s", time.Since(t0).Round(100*time.Millisecond))
	if st, err := vm.Status(ctxT(t, time.Minute)); err != nil || st != "Stopped" {
		t.Fatalf("status after stop = %q, %v; want Stopped", st, err)
	}

	wantStopped := func(t *testing.T, sess *mcp.ClientSession, tool string, args map[string]any) {
		t.Helper()
		t0 := time.Now()
		res, text := callTool(t, sess, tool, args)
		t.Logf("%s while stopped (%s): isError=%v %q", tool, time.Since(t0).Round(time.Millisecond), res.IsError, text)
		if !res.IsError {
			t.Errorf("%s while the instance is stopped: want an isError result, got %q", tool, text)
			return
		}
		if !strings.Contains(text, "stopped") {
			t.Errorf("%s while stopped: error %q does not say the instance is stopped", tool, text)
		}
		if want := "limactl start " + instanceName; !strings.Contains(text, want) {
			t.Errorf("%s while stopped: error %q does not name %q", tool, text, want)
		}
	}
	shellArgs := map[string]any{"command": []string{"true"}, "directory": "/"}
	t.Run("OpenSession", func(t *testing.T) {
		wantStopped(t, s.Session, "run_shell_command", shellArgs)
		wantStopped(t, s.Session, "read_file", map[string]any{"path": "/etc/hostname"})
		wantStopped(t, s.Session, "list_directory", map[string]any{"path": "/"})
	})
	t.Run("NewSession", func(t *testing.T) {
		// A server started while the instance is stopped still serves (tools/list works) and
		// explains every call.
		// (The guest cannot make a new directory now: reuse the first server's.)
		s2 := startServerIn(t, s.Dir, nil, "limactl", "mcp", "serve", instanceName)
		if names := toolNames(t, s2.Session); len(names) < 7 {
			t.Errorf("tools/list while stopped: %v", names)
		}
		wantStopped(t, s2.Session, "run_shell_command", shellArgs)
	})

	t0 = time.Now()
	if _, err := limavm.Boot(ctxT(t, 10*time.Minute), instanceName); err != nil {
		t.Fatalf("restarting the VM: %v", err)
	}
	t.Logf("limactl start: %s", time.Since(t0).Round(100*time.Millisecond))

	t0 = time.Now()
	after := shellOK(t, s.Session, "/", bootID)
	t.Logf("first call after the restart (reconnect): %s", time.Since(t0).Round(time.Millisecond))
	if after == before {
		t.Errorf("boot_id unchanged (%q): the VM did not restart", after)
	}
	// The connection before the stop rode the instance's ControlMaster; the one after the
	// restart was made by itself (through the new host agent's master when it is up already,
	// else directly: both are correct).
	log := s.Stderr.String()
	vias := regexp.MustCompile(`msg="connected to the guest" via=(\w+)`).FindAllStringSubmatch(log, -1)
	t.Logf("connections: %v", vias)
	if len(vias) < 2 || vias[0][1] != "controlmaster" {
		t.Errorf("want a connection through the ControlMaster before the stop and a new one after the restart:\n%s", log)
	}
	if res, text := callTool(t, s.Session, "read_file", map[string]any{"path": "/etc/hostname"}); res.IsError {
		t.Errorf("read_file after the restart: %s", text)
	}
	if res, text := callTool(t, s.Session, "glob", map[string]any{"pattern": "host*", "path": "/etc"}); res.IsError || !strings.Contains(text, "/etc/hostname") {
		t.Errorf("glob after the restart: isError=%v %s", res.IsError, text)
	}
	// The policy session's rules were gone with the boot; its first call sets them up again
	// before the command runs: as the agent's user, with egress refused (the rule's REJECT:
	// refused at once, never a connect or a timeout).
	if out := guestShell(t, "sudo iptables -S 2>/dev/null | grep -c LIMACTL-MCP || true"); strings.TrimSpace(out) != "0" {
		t.Logf("iptables after the boot, before the first call: %s", out)
	}
	out, _, text := runShell(t, ns, reachHost)
	if strings.Contains(out.Stdout, "REACHED") || !strings.Contains(out.Stdout, "lmcp-") || strings.Contains(out.Stdout, "timed out") {
		t.Errorf("the network policy after the VM restart: %s", text)
	}
	if n := strings.TrimSpace(guestShell(t, "sudo iptables -S | grep -c 'LIMACTL-MCP' || true")); n == "0" {
		t.Errorf("no LIMACTL-MCP rules after the policy session's first call since the restart")
	}

	// The review interrupted by the stop: the next one finishes it.
	if out, stderr, code := plugin(t, rdir, "review", instanceName, "--yes"); code != 0 {
		t.Errorf("review after the restart: exit %d\n%s\n%s", code, out, stderr)
	}
	if fi, err := os.Stat(filepath.Join(rdir, "big.bin")); err != nil || fi.Size() != bigSize {
		t.Errorf("big.bin after the restart's review: %v %v", fi, err)
	}
	if got := readHost(t, filepath.Join(rdir, "keep.txt")); got != "new\n" {
		t.Errorf("keep.txt after the restart's review: %q", got)
	}
	// The shell's work survived the stop, pending; a review brings it over.
	if out, stderr, code := plugin(t, sdir, "review", instanceName, "--yes"); code != 0 {
		t.Errorf("review of the shell's work after the restart: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := readHost(t, filepath.Join(sdir, "work.txt")); got != "before-the-stop\n" {
		t.Errorf("work.txt after the restart's review: %q", got)
	}
}
