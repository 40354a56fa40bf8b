package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runner/background"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Background processes, driven over the protocol as the host drives them, against each runner.

var testBgOutput = runnerproto.BgOutput{SegmentBytes: 4096, HeadSegments: 2, TailSegments: 3}

// forEachBgRunner is forEachRunner with a home of the test's own (where the processes'
// directories go). A runner under QEMU user-mode emulation cannot start its supervisor (itself,
// an arm64 binary) without binfmt_misc, which this machine may lack: it is skipped then.
func forEachBgRunner(t *testing.T, f func(t *testing.T, start func() *testRunner, home string)) {
	for _, kind := range runnerKinds {
		t.Run(kind, func(t *testing.T) {
			if kind != "in-process" && kind != runtime.GOARCH {
				if _, err := os.Stat("/proc/sys/fs/binfmt_misc/qemu-" + map[string]string{"arm64": "aarch64", "amd64": "x86_64"}[kind]); err != nil {
					t.Skipf("the %s runner runs under QEMU user-mode emulation here, and without binfmt_misc it cannot exec its supervisor", kind)
				}
			}
			home := t.TempDir()
			start := func() *testRunner {
				if kind == "in-process" {
					t.Setenv("HOME", home)
					return startRunner(t, kind)
				}
				return startRunnerWith(t, kind, runnerOpts{env: append(os.Environ(), "HOME="+home)})
			}
			f(t, start, home)
			// Whatever a failed test left running goes.
			r := start()
			r.call(t, &runnerproto.Request{BgEnd: &runnerproto.BgEndRequest{Group: "s"}})
		})
	}
}

func bgStart(t *testing.T, r *testRunner, group string, argv ...string) *runnerproto.BgStartResult {
	t.Helper()
	resp := r.call(t, &runnerproto.Request{BgStart: &runnerproto.BgStartRequest{Group: group, Argv: argv, Dir: "/", Output: testBgOutput, MaxRunning: 3, MaxKept: 5}})
	if resp.BgStart == nil {
		t.Fatalf("bg start %q: %q", argv, resp.Error)
	}
	return resp.BgStart
}

func bgRead(t *testing.T, r *testRunner, group string, id int, off int64, max int) *runnerproto.BgReadResult {
	t.Helper()
	resp := r.call(t, &runnerproto.Request{BgRead: &runnerproto.BgReadRequest{Group: group, ID: id, Offset: off, Max: max, Output: testBgOutput}})
	if resp.BgRead == nil {
		t.Fatalf("bg read %d: %q", id, resp.Error)
	}
	return resp.BgRead
}

func bgSignal(t *testing.T, r *testRunner, group string, id int, sig string, grace time.Duration) *runnerproto.BgSignalResult {
	t.Helper()
	resp := r.call(t, &runnerproto.Request{BgSignal: &runnerproto.BgSignalRequest{Group: group, ID: id, Signal: sig, GraceMillis: grace.Milliseconds(), Output: testBgOutput}})
	if resp.BgSignal == nil {
		t.Fatalf("bg signal %d: %q", id, resp.Error)
	}
	return resp.BgSignal
}

// readUntilEnded reads id's output from 0 until the process has ended and everything is read.
func readUntilEnded(t *testing.T, r *testRunner, group string, id int) (string, runnerproto.BgStatus) {
	t.Helper()
	var out bytes.Buffer
	var off int64
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		res := bgRead(t, r, group, id, off, 1000)
		out.Write(res.Data)
		off = res.Next
		if !res.Status.Running && off >= res.Status.OutputBytes {
			return out.String(), res.Status
		}
		if len(res.Data) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatalf("process %d did not end", id)
	return "", runnerproto.BgStatus{}
}

func TestBackgroundOutputAndExit(t *testing.T) {
	forEachBgRunner(t, func(t *testing.T, start func() *testRunner, home string) {
		r := start()
		st := bgStart(t, r, "s/o", "GREETING=hi", "sh", "-c", `echo "$GREETING"; sleep 0.3; echo oops >&2; printf '%s' "$PWD"; exit 3`)
		if st.ID != 1 || st.PID < 2 || st.StartError != "" {
			t.Fatalf("start: %+v", st)
		}
		out, status := readUntilEnded(t, r, "s/o", st.ID)
		if out != "hi\noops\n/" || status.ExitCode != 3 || status.Signal != "" || status.Lost || status.PID != st.PID {
			t.Errorf("output %q, status %+v", out, status)
		}
		if got := strings.Join(status.Argv, " "); got != `GREETING=hi sh -c echo "$GREETING"; sleep 0.3; echo oops >&2; printf '%s' "$PWD"; exit 3` || status.Dir != "/" || status.Started == 0 || status.Ended < status.Started {
			t.Errorf("status %+v", status)
		}
		// Reading again from an offset: only what follows it.
		if res := bgRead(t, r, "s/o", st.ID, 3, 4); string(res.Data) != "oops" || res.Offset != 3 || res.Next != 7 || res.Skipped != 0 {
			t.Errorf("read from 3: %+v", res)
		}
		// A program that is not there, a directory that is not there, an id that is not there.
		if st := bgStart(t, r, "s/o", "no-such-program-xyz"); st.ID != 0 && st.StartError == "" {
			// Through the user's shell: it starts, and says so in its output.
			out, status := readUntilEnded(t, r, "s/o", st.ID)
			if status.ExitCode != 127 || !strings.Contains(out, "not found") {
				t.Errorf("missing program: %q %+v", out, status)
			}
		}
		if st := bgStart(t, r, "s/o", "/no/such/program"); st.ID != 0 || st.ExitCode != 127 || st.StartError == "" {
			t.Errorf("missing path: %+v", st)
		}
		resp := r.call(t, &runnerproto.Request{BgStart: &runnerproto.BgStartRequest{Group: "s/o", Argv: []string{"true"}, Dir: "/no/such/dir", Output: testBgOutput, MaxRunning: 3, MaxKept: 5}})
		if resp.BgStart == nil || !resp.BgStart.DirMissing {
			t.Errorf("missing directory: %+v %q", resp.BgStart, resp.Error)
		}
		if res := bgRead(t, r, "s/o", 99, 0, 10); !res.Unknown {
			t.Errorf("unknown id: %+v", res)
		}
		if res := bgSignal(t, r, "s/o", 1, "TERM", time.Second); !res.AlreadyEnded || res.Status.ExitCode != 3 {
			t.Errorf("signal after the end: %+v", res)
		}
		// Groups that are not SESSION/OWNER are refused.
		for _, g := range []string{"", "s", "../x/o", "s/o/p", "s/.."} {
			if resp := r.call(t, &runnerproto.Request{BgList: &runnerproto.BgListRequest{Group: g, Max: 10, Output: testBgOutput}}); resp.Error == "" {
				t.Errorf("group %q accepted", g)
			}
		}
	})
}

// An endless writer stays bounded on disk: the first and the last segments are kept; a read
// in what was dropped says how much was skipped.
func TestBackgroundEndlessOutputStaysBounded(t *testing.T) {
	forEachBgRunner(t, func(t *testing.T, start func() *testRunner, home string) {
		r := start()
		st := bgStart(t, r, "s/o", "yes", "0123456789")
		if st.ID == 0 {
			t.Fatalf("start: %+v", st)
		}
		var res *runnerproto.BgReadResult
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if res = bgRead(t, r, "s/o", st.ID, 0, 100); res.Status.OutputBytes > 1<<20 {
				break
			}
		}
		if res.Status.OutputBytes <= 1<<20 || string(res.Data) != strings.Repeat("0123456789\n", 10)[:100] {
			t.Fatalf("after a while: %d bytes, read %q", res.Status.OutputBytes, res.Data)
		}
		dir := filepath.Join(home, background.BaseDir, "s", "o", fmt.Sprint(st.ID))
		var diskBytes int64
		segs := 0
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "out.") {
				diskBytes += fi.Size()
				segs++
			}
		}
		if limit := int64((testBgOutput.HeadSegments + testBgOutput.TailSegments) * testBgOutput.SegmentBytes); diskBytes > limit || segs > 5 {
			t.Errorf("%d segments, %d bytes on disk, more than %d", segs, diskBytes, limit)
		}
		t.Logf("%d bytes written, %d kept on disk in %d segments", res.Status.OutputBytes, diskBytes, segs)
		mid := bgRead(t, r, "s/o", st.ID, 3*4096, 100)
		if mid.Skipped == 0 || mid.Offset != 3*4096+mid.Skipped || len(mid.Data) == 0 || mid.Next != mid.Offset+int64(len(mid.Data)) {
			t.Errorf("a read in the dropped middle: offset %d, skipped %d, %d bytes", mid.Offset, mid.Skipped, len(mid.Data))
		}
		// Reading far past the end: nothing, and the end as the next offset.
		if end := bgRead(t, r, "s/o", st.ID, 1<<50, 100); len(end.Data) != 0 || end.Next > 1<<50 || end.Next < res.Status.OutputBytes {
			t.Errorf("past the end: %+v", end.Next)
		}
		sig := bgSignal(t, r, "s/o", st.ID, "TERM", 5*time.Second)
		if sig.Status.Running || sig.Status.Signal != "SIGTERM" || sig.Killed {
			t.Errorf("TERM: %+v", sig)
		}
	})
}

// A background process outlives the runner that started it (the host's connection moved, or
// dropped): another runner lists, reads and kills it. A process that ignores TERM gets KILL
// after the grace period.
func TestBackgroundOutlivesItsRunner(t *testing.T) {
	forEachBgRunner(t, func(t *testing.T, start func() *testRunner, home string) {
		a := start()
		st := bgStart(t, a, "s/o", "sh", "-c", `trap '' TERM; echo ready; while :; do sleep 0.1; done`)
		a.in.Close() // the runner reads the end of its input and exits, as when its SSH session ends
		<-a.done
		time.Sleep(200 * time.Millisecond)
		b := start()
		resp := b.call(t, &runnerproto.Request{BgList: &runnerproto.BgListRequest{Group: "s/o", Max: 10, Output: testBgOutput}})
		if resp.BgList == nil || len(resp.BgList.Processes) != 1 || !resp.BgList.Processes[0].Running || resp.BgList.Processes[0].PID != st.PID {
			t.Fatalf("list from another runner: %+v %q", resp.BgList, resp.Error)
		}
		if res := bgRead(t, b, "s/o", st.ID, 0, 100); string(res.Data) != "ready\n" {
			t.Errorf("read from another runner: %q", res.Data)
		}
		t0 := time.Now()
		sig := bgSignal(t, b, "s/o", st.ID, "TERM", 500*time.Millisecond)
		if !sig.Killed || sig.Status.Running || sig.Status.Signal != "SIGKILL" {
			t.Errorf("TERM then KILL: %+v", sig)
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Errorf("the kill took %s", d)
		}
	})
}

// Caps: the running ones, the records kept; ending a session kills what runs and removes it
// all; what the agent writes into the directories is refused, never trusted.
func TestBackgroundLimitsAndEnd(t *testing.T) {
	forEachBgRunner(t, func(t *testing.T, start func() *testRunner, home string) {
		r := start()
		var pids []int
		for i := range 3 {
			st := bgStart(t, r, "s/o", "sleep", "60")
			if st.ID != i+1 {
				t.Fatalf("start %d: %+v", i, st)
			}
			pids = append(pids, st.PID)
		}
		if st := bgStart(t, r, "s/o", "sleep", "60"); !st.TooMany || st.ID != 0 {
			t.Errorf("a fourth: %+v", st)
		}
		other := bgStart(t, r, "s/p", "sleep", "60") // another owner of the same session
		// The agent rewrites a record: pid 1 (kill(-1) would reach every process) is refused.
		if err := os.WriteFile(filepath.Join(home, background.BaseDir, "s", "o", "2", "info.json"), []byte(`{"argv":["x"],"pid":1}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if resp := r.call(t, &runnerproto.Request{BgSignal: &runnerproto.BgSignalRequest{Group: "s/o", ID: 2, Signal: "KILL", Output: testBgOutput}}); resp.Error == "" {
			t.Errorf("a record naming pid 1 was signalled: %+v", resp.BgSignal)
		}
		if err := os.WriteFile(filepath.Join(home, background.BaseDir, "s", "o", "2", "info.json"), bytes.Repeat([]byte("x"), background.MaxInfo+10), 0o644); err != nil {
			t.Fatal(err)
		}
		if resp := r.call(t, &runnerproto.Request{BgRead: &runnerproto.BgReadRequest{Group: "s/o", ID: 2, Max: 10, Output: testBgOutput}}); resp.Error == "" {
			t.Errorf("an oversized record was read")
		}
		resp := r.call(t, &runnerproto.Request{BgList: &runnerproto.BgListRequest{Group: "s/o", Max: 10, Output: testBgOutput}})
		if resp.BgList == nil || len(resp.BgList.Processes) != 2 {
			t.Errorf("list with a broken record: %+v %q", resp.BgList, resp.Error)
		}
		// The owners of a session, then the end of one owner (serve's exit), then of all (discard).
		resp = r.call(t, &runnerproto.Request{BgEnd: &runnerproto.BgEndRequest{Group: "s", ListOnly: true}})
		if resp.BgEnd == nil || strings.Join(resp.BgEnd.Owners, ",") != "o,p" || resp.BgEnd.Killed != 0 {
			t.Errorf("owners: %+v %q", resp.BgEnd, resp.Error)
		}
		resp = r.call(t, &runnerproto.Request{BgEnd: &runnerproto.BgEndRequest{Group: "s", KeepOwners: []string{"p"}}})
		if resp.BgEnd == nil || resp.BgEnd.Killed != 2 {
			t.Errorf("end of s but p: %+v %q", resp.BgEnd, resp.Error)
		}
		for _, pid := range []int{pids[0], pids[2]} {
			if background.GroupAlive(pid) {
				t.Errorf("process group %d still runs", pid)
			}
		}
		if !background.GroupAlive(other.PID) {
			t.Errorf("the kept owner's process is gone")
		}
		if _, err := os.Stat(filepath.Join(home, background.BaseDir, "s", "o")); !os.IsNotExist(err) {
			t.Errorf("the ended owner's directory: %v", err)
		}
		resp = r.call(t, &runnerproto.Request{BgEnd: &runnerproto.BgEndRequest{Group: "s/p"}})
		if resp.BgEnd == nil || resp.BgEnd.Killed != 1 || background.GroupAlive(other.PID) {
			t.Errorf("end of s/p: %+v %q", resp.BgEnd, resp.Error)
		}
		// pids[1]'s record was broken by the agent: its process is the agent's to kill.
		_ = syscallKillGroup(pids[1])
	})
}
