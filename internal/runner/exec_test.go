package runner

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// exec1 runs argv in / through the runner r, keeping up to 2 MiB of each stream.
func exec1(t *testing.T, r *testRunner, timeout time.Duration, argv ...string) *runnerproto.ExecResult {
	t.Helper()
	return r.exec(t, &runnerproto.ExecRequest{Argv: argv, Dir: "/", TimeoutMillis: timeout.Milliseconds(), HeadBytes: 1 << 20, TailBytes: 1 << 20})
}

// Under load, every command's whole output comes back: nothing is cut by a drain timer (with
// exec.Cmd's 250 ms WaitDelay, 16-22 of 500 calls in flight lost their output).
func TestExecOutputCompleteUnderLoad(t *testing.T) {
	forEachRunner(t, testExecOutputCompleteUnderLoad)
}

func testExecOutputCompleteUnderLoad(t *testing.T, rn *testRunner) {
	// The load is the host's: 400 calls at once. A runner under qemu-user emulation gets 24,
	// 2 at a time: qemu-user forks a many-threaded emulated process with its own locks held
	// by other threads now and then, and the child then never reaches exec (CI saw it hang
	// a call for 10 minutes, and hold other calls' output, at 8 at a time on a loaded host as
	// at 400); that is the emulator's, not the runner's. The native runners take the full
	// load; the emulated one checks the arm64 build does the same work.
	n, inFlight := 400, 400
	if rn.kind != "in-process" && rn.kind != runtime.GOARCH {
		n, inFlight = 24, 2
	}
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []string
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			// Busy work before and between writes keeps both cores loaded while others exit.
			script := fmt.Sprintf(`i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; j=0; while [ $j -lt 2000 ]; do echo "call %d line $j"; j=$((j+1)); done; echo "end %d" >&2`, i, i)
			r := exec1(t, rn, 5*time.Minute, "sh", "-c", script)
			var want strings.Builder
			for j := range 2000 {
				fmt.Fprintf(&want, "call %d line %d\n", i, j)
			}
			if got := string(r.Stdout.Head) + string(r.Stdout.Tail); got != want.String() || string(r.Stderr.Head) != fmt.Sprintf("end %d\n", i) || r.ExitCode != 0 || len(r.HeldBy) > 0 {
				mu.Lock()
				wrong = append(wrong, fmt.Sprintf("call %d: %d of %d stdout bytes, stderr %q, exit %d, held by %v", i, len(got), want.Len(), r.Stderr.Head, r.ExitCode, r.HeldBy))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(wrong) > 0 {
		t.Fatalf("%d of %d answers wrong:\n%s", len(wrong), n, strings.Join(wrong, "\n"))
	}
}

// A process left running that holds the output is found, named, and does not hold the call.
func TestExecBackgroundHolderIsNamed(t *testing.T) {
	forEachRunner(t, testExecBackgroundHolderIsNamed)
}

func testExecBackgroundHolderIsNamed(t *testing.T, rn *testRunner) {
	for _, tc := range []struct{ name, script string }{
		{"in the group", "sleep 37 & echo bg"},
		{"own session", "setsid sleep 38 & echo bg"},
		{"stderr only", "sleep 39 >/dev/null & echo bg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := exec1(t, rn, time.Minute, "sh", "-c", tc.script)
			took := time.Since(start)
			killHolders(r)
			if string(r.Stdout.Head) != "bg\n" || r.ExitCode != 0 {
				t.Fatalf("stdout %q exit %d", r.Stdout.Head, r.ExitCode)
			}
			if len(r.HeldBy) != 1 || !strings.Contains(r.HeldBy[0], "sleep 3") {
				t.Fatalf("held by %q", r.HeldBy)
			}
			if took > 30*time.Second { // the sleeps last 37-39 s; the bound is generous, for emulation
				t.Fatalf("the call waited %v for a process it had found", took)
			}
			t.Logf("%s: answered in %v, held by %v", tc.name, took, r.HeldBy)
		})
	}
}

// killHolders ends the processes a test left running.
func killHolders(r *runnerproto.ExecResult) {
	for _, h := range r.HeldBy {
		var pid int
		if _, err := fmt.Sscanf(h, "pid %d", &pid); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// A process left running whose output goes elsewhere is no reason to cut anything, and late
// output of the command's own group is read to the end.
func TestExecReadsToTheEnd(t *testing.T) {
	forEachRunner(t, testExecReadsToTheEnd)
}

func testExecReadsToTheEnd(t *testing.T, rn *testRunner) {
	r := exec1(t, rn, time.Minute, "sh", "-c", "sleep 30 >/dev/null 2>&1 & (sleep 0.4; echo late) ; echo last")
	if string(r.Stdout.Head) != "late\nlast\n" || len(r.HeldBy) != 0 {
		killHolders(r)
		t.Fatalf("stdout %q held by %v", r.Stdout.Head, r.HeldBy)
	}
	// A grandchild that finishes writing after the command's own process exited: the group is
	// not done until it is, and its output is collected.
	r = exec1(t, rn, time.Minute, "sh", "-c", "(sleep 0.5; echo grandchild) & echo parent")
	got := string(r.Stdout.Head)
	killHolders(r)
	if got != "parent\ngrandchild\n" && !(got == "parent\n" && len(r.HeldBy) > 0) {
		t.Fatalf("stdout %q held by %v", got, r.HeldBy)
	}
}

// parentPid reads a process's parent from /proc, whatever its command name holds.
func TestParentPid(t *testing.T) {
	if got, want := parentPid(os.Getpid()), os.Getppid(); got != want {
		t.Fatalf("parentPid(self) = %d, want %d", got, want)
	}
	if got := parentPid(-1); got != 0 {
		t.Fatalf("parentPid(-1) = %d, want 0", got)
	}
}
