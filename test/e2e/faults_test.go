//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
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

// TestFaultGuestDiskFull: a write that does not fit is a clear error that says what to do,
// and the file keeps its content.
func TestFaultGuestDiskFull(t *testing.T) {
	s := startServer(t, nil, "limactl-mcp", "serve", instanceName)
	dir := fmt.Sprintf("%s/mcp-e2e-full-%d", guestHome(t), time.Now().UnixNano()%1e9)
	guestShell(t, fmt.Sprintf("mkdir -p %[1]s && sudo mount -t tmpfs -o size=512k tmpfs %[1]s && sudo chown $(id -u):$(id -g) %[1]s", shq(dir)))
	t.Cleanup(func() { guestShell(t, fmt.Sprintf("sudo umount %[1]s; rmdir %[1]s", shq(dir))) })
	file := dir + "/data.txt"
	small := strings.Repeat("kept\n", 20000) // 100 KB
	if res, text := callTool(t, s.Session, "write_file", map[string]any{"path": file, "content": small}); res.IsError {
		t.Fatal(text)
	}
	res, text := callTool(t, s.Session, "write_file", map[string]any{"path": file, "content": strings.Repeat("too big\n", 128<<10)})
	if !res.IsError || !strings.Contains(text, "disk is full") || !strings.Contains(text, "df -h") {
		t.Fatalf("want a clear disk-full error, got %v: %s", res.IsError, text)
	}
	if got := guestShell(t, "cat "+shq(file)); got != small {
		t.Fatalf("the file changed: %d bytes", len(got))
	}
	if n := strings.TrimSpace(guestShell(t, "ls -A "+shq(dir)+" | wc -l")); n != "1" {
		t.Errorf("%s entries in the directory, want only the file", n)
	}
}

// TestFaultRunnerDiesMidCall: the guest side of the connection dies under a running call (the
// runner killed, or the sshd process that serves the server's SSH connection): that call gets
// a clear error, and the next one reconnects and works.
func TestFaultRunnerDiesMidCall(t *testing.T) {
	t.Run("runner", func(t *testing.T) {
		faultMidCall(t, "pkill -KILL -f '[.]cache/limactl-mcp/runner-' || true")
	})
	t.Run("ssh connection", func(t *testing.T) {
		// The runner's parent is the sshd process of the server's own connection (Lima's host
		// agent has its own): killing it drops the connection with every channel on it.
		faultMidCall(t, "sudo kill -KILL \"$(ps -o ppid= -p \"$(pgrep -n -f '[.]cache/limactl-mcp/runner-')\" | tr -d ' ')\"")
	})
}

func faultMidCall(t *testing.T, kill string) {
	s := startServer(t, nil, "limactl-mcp", "serve", instanceName)
	shellOK(t, s.Session, "/", "true")
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

// TestFaultClientCancelsManyCalls: calls the client cancels end at once, and their process
// groups are gone from the guest.
func TestFaultClientCancelsManyCalls(t *testing.T) {
	s := startServer(t, nil, "limactl-mcp", "serve", instanceName)
	shellOK(t, s.Session, "/", "true")
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
}
