//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The faults an agent's day brings, each with the outcome a person needs. (A VM stopped and
// started under an open session is zz_restart_test.go.)

// TestFaultServeKilledDuringWriteFile kills `serve` with SIGKILL while it writes a large file:
// the guest file holds its old content or its new one, never a mix, and nothing is left beside
// it.
func TestFaultServeKilledDuringWriteFile(t *testing.T) {
	name := fmt.Sprintf("mcp-e2e-torn-%d", time.Now().UnixNano()%1e9)
	file := guestHome(t) + "/" + name
	t.Cleanup(func() { guestShell(t, "rm -f "+shq(file)) })
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	old, new := strings.Repeat("old\n", 1<<19), strings.Repeat("new!\n", 1<<20)
	sums := map[string]string{sum(old): "old", sum(new): "new"}
	first := startServer(t, nil, "limactl-mcp", "serve", instanceName)
	if res, text := callTool(t, first.Session, "write_file", map[string]any{"path": file, "content": old}); res.IsError {
		t.Fatal(text)
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	seen := map[string]int{}
	for i := range 4 {
		procCtx, kill := context.WithCancel(context.Background()) // cancelling it sends SIGKILL
		cmd := vm.Command(procCtx, "limactl-mcp", "serve", instanceName)
		cmd.Dir = sharedDir(t)
		client := mcp.NewClient(&mcp.Implementation{Name: "limactl-mcp-e2e", Version: "v0.0.1"}, nil)
		session, err := client.Connect(ctxT(t, 2*time.Minute), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			kill()
			t.Fatal(err)
		}
		shellOK(t, session, "/", "true") // connected, runner up
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = session.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": file, "content": new}})
		}()
		time.Sleep(time.Duration(rng.Intn(1500)) * time.Millisecond)
		kill()
		<-done
		_ = session.Close()
		var got string
		for deadline := time.Now().Add(30 * time.Second); ; {
			out := strings.Fields(guestShell(t, fmt.Sprintf("sha256sum %s; ls -a %s | grep -c '^\\.%s\\.limactl-mcp-' || true", shq(file), shq(guestHome(t)), name)))
			got = out[0]
			if out[2] == "0" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("kill %d (seed %d): a temporary file was left beside the file", i, seed)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		what, ok := sums[got]
		if !ok {
			t.Fatalf("kill %d (seed %d): the file is neither the old content nor the new", i, seed)
		}
		seen[what]++
		// Back to the old content for the next round.
		if res, text := callTool(t, first.Session, "write_file", map[string]any{"path": file, "content": old}); res.IsError {
			t.Fatal(text)
		}
	}
	t.Logf("seed %d: after serve was killed mid-write, the file held %v", seed, seen)
}

// TestFaultGuestDiskFull: the staged copy of a real session lives on a small filesystem (a
// tmpfs mounted at its guest path before `serve` stages into it); a write that does not fit
// is a clear error that says what to do, every staged file keeps its content, nothing is left
// beside them, nothing is pending, and the host project is byte for byte as it was.
func TestFaultGuestDiskFull(t *testing.T) {
	files := map[string]string{
		"README.md":     "# full\n",
		"run.sh":        "#!/bin/sh\necho run\n",
		"src/main.go":   "package main\n\nfunc main() {}\n",
		"src/data.txt":  strings.Repeat("kept\n", 20000), // 100 KB
		"docs/notes.md": strings.Repeat("a note\n", 1000),
		"empty/":        "",
	}
	dir := project(t, files)
	hostBefore := hostTree(t, dir)
	discardOnCleanup(t, dir) // runs last: after the unmount below
	// The copy goes to the same absolute path in the guest (the guest user's home is elsewhere,
	// so the path is created with sudo; staging accepts an existing empty directory it can
	// write).
	guestShell(t, fmt.Sprintf("sudo mkdir -p %[1]s && sudo mount -t tmpfs -o size=1m,mode=0755,uid=$(id -u),gid=$(id -g) tmpfs %[1]s", shq(dir)))
	t.Cleanup(func() { // after the server stopped, before the discard
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, stderr, err := vm.Shell(ctx, fmt.Sprintf("sudo umount %[1]s || sudo umount -l %[1]s", shq(dir))); err != nil {
			t.Errorf("unmounting the tmpfs at %s: %v %s", dir, err, stderr)
		}
	})
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	// The first call waits for the staging; the copy is on the tmpfs.
	if fsType := shellOK(t, s.Session, dir, "stat -f -c %T ."); strings.TrimSpace(fsType) != "tmpfs" {
		t.Fatalf("the staged copy is on %q, not on the small tmpfs", fsType)
	}
	big := strings.Repeat("too big\n", 256<<10) // 2 MiB, twice the filesystem
	for _, p := range []string{"src/data.txt", "src/new.txt"} {
		res, text := callTool(t, s.Session, "write_file", map[string]any{"path": dir + "/" + p, "content": big})
		if !res.IsError || !strings.Contains(text, "disk is full") || !strings.Contains(text, "df -h") {
			t.Errorf("write_file %s: want a clear disk-full error that says what to do, got isError=%v: %s", p, res.IsError, text)
		}
	}
	// The guest copy: exactly the staged files, each with its content (no temporary file left).
	var want []string
	for rel, content := range files {
		if !strings.HasSuffix(rel, "/") {
			sum := sha256.Sum256([]byte(content))
			want = append(want, hex.EncodeToString(sum[:])+"  ./"+rel)
		}
	}
	got := strings.Split(strings.TrimSpace(guestShell(t, "cd "+shq(dir)+" && find . -type f -print0 | xargs -0 sha256sum")), "\n")
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("the staged copy changed:\n got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st := statusOf(t, dir); st["pending_total"] != 0.0 {
		t.Errorf("changes pending after the failed writes: %v", st)
	}
	// The host: untouched.
	hostAfter := hostTree(t, dir)
	if !maps.Equal(hostBefore, hostAfter) {
		t.Errorf("the host project changed:\nbefore %v\nafter  %v", hostBefore, hostAfter)
	}
	// The server works on: a write that fits lands.
	if res, text := callTool(t, s.Session, "write_file", map[string]any{"path": dir + "/src/small.txt", "content": "fits\n"}); res.IsError {
		t.Errorf("a small write after the full ones: %s", text)
	}
}

// hostTree describes every entry under dir (type, mode, size, modification time, and the
// content's hash or the link's target), by path: two descriptions are equal when the tree is
// byte for byte the same.
func hostTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			desc += " " + hex.EncodeToString(sum[:])
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = desc
		return nil
	})
	mustT(t, err)
	return m
}

// TestFaultRunnerDiesMidCall: the guest side of the connection dies under a running call (the
// runner killed, or the sshd process that serves the server's SSH connection): that call gets
// a clear error, and the next one reconnects and works.
func TestFaultRunnerDiesMidCall(t *testing.T) {
	t.Run("runner", func(t *testing.T) {
		faultMidCall(t, "pkill -KILL -f '[l]imactl-mcp/runner-' || true", false)
	})
	t.Run("ssh connection", func(t *testing.T) {
		// Once serve has moved from the instance's ControlMaster to its own connection, the
		// runner's parent is the sshd process of that connection: killing it drops the
		// connection with every channel on it. (Before the handoff the runner's parent serves
		// the master, which Lima's host agent and limactl shell, this test's included, ride.)
		faultMidCall(t, "sudo kill -KILL \"$(ps -o ppid= -p \"$(pgrep -n -f '[l]imactl-mcp/runner-')\" | tr -d ' ')\"", true)
	})
}

// faultMidCall kills (a guest script) during a call and checks that the call ends with an
// error that says what to do and the next call works. ownConnection waits until serve runs on
// its own connection, not the instance's ControlMaster.
func faultMidCall(t *testing.T, kill string, ownConnection bool) {
	s := startServer(t, nil, "limactl-mcp", "serve", instanceName, "--debug")
	shellOK(t, s.Session, "/", "true")
	if ownConnection {
		deadline := time.Now().Add(90 * time.Second)
		for !strings.Contains(s.Stderr.String(), "handoff=true") {
			if time.Now().After(deadline) {
				t.Fatalf("serve did not move to a connection of its own:\n%s", s.Stderr.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := s.Session.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_shell_command", Arguments: map[string]any{"directory": "/", "command": []string{"sleep", "61.5"}}})
		done <- res
	}()
	time.Sleep(2 * time.Second)
	guestShell(t, kill)
	var res *mcp.CallToolResult
	select {
	case res = <-done:
	case <-time.After(45 * time.Second):
		t.Fatal("the call under the dead runner did not end")
	}
	if res == nil || !res.IsError {
		t.Fatalf("want an error result, got %+v", res)
	}
	if text := firstText(res); !strings.Contains(text, "retry") && !strings.Contains(text, "connection") {
		t.Errorf("the error does not say what happened or what to do: %s", text)
	}
	if out := shellOK(t, s.Session, "/", "echo back"); out != "back\n" {
		t.Fatalf("the next call: %q", out)
	}
	guestShell(t, "pkill -f '[s]leep 61.5' || true")
}

// TestFaultClientCancelsManyCalls: calls the client cancels end at once, their process
// groups are gone from the guest, and the runner's memory returns to where it was.
func TestFaultClientCancelsManyCalls(t *testing.T) {
	s := startServer(t, nil, "limactl-mcp", "serve", "--debug", instanceName)
	shellOK(t, s.Session, "/", "true")
	// The server moves from the ControlMaster to a connection of its own after a few seconds,
	// with a runner of its own: wait for that move, so that the runner measured is the one
	// that serves the calls below (a slow machine would otherwise see it change under them).
	for deadline := time.Now().Add(time.Minute); !strings.Contains(s.Stderr.String(), "handoff=true"); {
		if time.Now().After(deadline) {
			t.Fatalf("no handoff to a connection of the server's own within a minute:\n%s", s.Stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	shellOK(t, s.Session, "/", "true")
	runner := guestRunnerPID(t) // this server's: the newest, just started, idle
	rssBefore := guestRSS(t, runner)
	if rssBefore == 0 {
		t.Fatalf("no memory figure for the runner (pid %d)", runner)
	}
	const n = 40
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "run_shell_command", Arguments: map[string]any{
				"directory": "/", "command": []string{"sh", "-c", fmt.Sprintf("sleep 300.%d & sleep 300.%d; wait", i, i)}}})
		}()
	}
	count := func() string {
		return strings.TrimSpace(guestShell(t, "pgrep -fc '^sleep 300\\.' || true"))
	}
	for deadline := time.Now().Add(time.Minute); count() != fmt.Sprint(2*n) && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
	}
	if got := count(); got != fmt.Sprint(2*n) {
		t.Fatalf("%s of %d processes started", got, 2*n)
	}
	rssBurst := guestRSS(t, runner)
	cancel()
	wg.Wait()
	for deadline := time.Now().Add(30 * time.Second); count() != "0"; {
		if time.Now().After(deadline) {
			t.Fatalf("%s processes of cancelled calls still run in the guest", count())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if out := shellOK(t, s.Session, "/", "echo still"); out != "still\n" {
		t.Fatalf("after the cancels: %q", out)
	}
	// The same runner served the calls before and after (a restarted one would start small).
	if now := guestRunnerPID(t); now != runner {
		t.Fatalf("the runner changed under the cancels: pid %d, then %d", runner, now)
	}
	// Its memory returns close to where it was. The bound is generous on purpose: Go's runtime
	// keeps the heap it grew for the burst and gives pages back to the kernel lazily, so
	// "close" is at most twice the RSS before plus 16 MiB. It catches a runner that keeps
	// large per-call state (output buffers, goroutines blocked on a dead call), not a few pages.
	// Polled for up to 20 s so that a collection under way can finish; not a timing assert.
	limit := 2*rssBefore + 16<<10
	var rssAfter int
	for deadline := time.Now().Add(20 * time.Second); ; {
		rssAfter = guestRSS(t, runner)
		if rssAfter <= limit || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if rssAfter == 0 {
		t.Fatalf("the runner (pid %d) is gone", runner)
	}
	t.Logf("RSS of the guest runner: %d KiB before the burst, %d KiB with %d calls running, %d KiB after the cancels (limit %d KiB)", rssBefore, rssBurst, n, rssAfter, limit)
	if rssAfter > limit {
		t.Errorf("the runner's memory did not return: %d KiB before the burst, %d KiB after the cancels (limit %d KiB)", rssBefore, rssAfter, limit)
	}
}

// guestRunnerPID is the pid of the newest runner in the guest (started by
// internal/guest as /usr/local/libexec/limactl-mcp/runner-ID, or ~/.cache/limactl-mcp/runner-ID
// on a guest without passwordless sudo).
func guestRunnerPID(t testing.TB) int {
	t.Helper()
	out := strings.TrimSpace(guestShell(t, "pgrep -n -f '[l]imactl-mcp/runner-' || true"))
	pid, err := strconv.Atoi(out)
	if err != nil {
		t.Fatalf("no runner in the guest: %q", out)
	}
	return pid
}

// guestRSS is a guest process's resident memory in KiB (VmRSS of /proc/PID/status), 0 when
// the process is gone.
func guestRSS(t testing.TB, pid int) int {
	t.Helper()
	out := strings.TrimSpace(guestShell(t, fmt.Sprintf("awk '/^VmRSS:/ {print $2}' /proc/%d/status 2>/dev/null || true", pid)))
	kib, _ := strconv.Atoi(out)
	return kib
}
