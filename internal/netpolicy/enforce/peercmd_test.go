package enforce

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// FuzzFormatCmdline: whatever a process puts in its command line (the agent's to write), the
// record gets one line of valid UTF-8 within the bound ParseEntry checks, and a short one as
// it was, its NULs as spaces.
func FuzzFormatCmdline(f *testing.F) {
	for _, seed := range []string{"curl\x00-sS\x00https://a.test/\x00", "", "\x00\x00", "\xff\xfe\x00x", strings.Repeat("é", 300), strings.Repeat("a\x00", 200), "\x1b[2J\x00\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := formatCmdline(raw)
		if !utf8.ValidString(s) || len(s) > netpolicy.MaxEntryCommand {
			t.Fatalf("formatCmdline(%q) = %q: %d bytes, valid %v", raw, s, len(s), utf8.ValidString(s))
		}
		e := netpolicy.Entry{Time: time.Unix(1767322000, 0), Host: "a.test", Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Command: s}
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := netpolicy.ParseEntry(line); !ok || got.Command != s {
			t.Fatalf("an entry with the command %q does not check out on the host (%q)", s, line)
		}
		if in := strings.TrimRight(string(raw), "\x00"); utf8.ValidString(in) && len(in) <= netpolicy.MaxEntryCommand && s != strings.ReplaceAll(in, "\x00", " ") {
			t.Fatalf("formatCmdline(%q) = %q, want it as it was", raw, s)
		}
	})
}

// crowd starts n processes of the agent's (sleeping), before the command the test looks for,
// and ends them when the test ends.
func crowd(t *testing.T, agent string, n int) {
	t.Helper()
	cmd := exec.Command("runuser", "-u", agent, "--", "bash", "-c", fmt.Sprintf("for i in $(seq %d); do sleep 600 & done; echo ready; wait", n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startReady(t, "the crowd", cmd, func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
}

// wrapPIDs makes the kernel give out process ids from low again, as it does when they wrap
// around: the processes started next get ids below those of the processes already there.
// (The next id given out changes, nothing else: no process is touched.)
func wrapPIDs(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte("1000"), 0); err != nil {
		t.Fatalf("cannot make the process ids wrap: %v", err)
	}
}

// A held connection names the agent's command that made it, however many older processes the
// agent has (the look is bounded by work, newest first, not by a clock a loaded machine runs
// out of: a 25 ms bound named nothing in a CI run), and after the process ids wrapped around
// between those processes and the command (newest by id alone named nothing in the next CI
// run); and a look that finds nothing reads them all within its bounds.
func TestProxyNamesTheCommandAmongManyProcesses(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	const n = 1200
	crowd(t, f.agent, n)
	wrapPIDs(t)
	f.watch(t)
	target := fmt.Sprintf("http://127.0.0.1:%d/crowd", f.upstream.Listener.Addr().(*net.TCPAddr).Port)
	res := f.curlAsync(target)
	held := f.waitHeld(t, 1)
	if want := "curl -sS -m 30 -x http://" + f.addr + " " + target; held[0].Command != want {
		t.Errorf("the held connection's command: %q, want %q", held[0].Command, want)
	}
	if err := Decide(f.layout, "lmcp-test", held[0].ID, netpolicy.DecisionDeny); err != nil {
		t.Fatal(err)
	}
	wait(t, res)
	if last := lastPID(); last <= 1000 || last > 20000 {
		t.Logf("the last process id given out is %d: did the ids wrap?", last)
	}

	u, err := user.Lookup(f.agent)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	t0 := time.Now()
	if got := commandOf(uid, 1); got != "" {
		t.Errorf("a socket nobody holds is held by %q", got)
	}
	t.Logf("a look through %d processes of the agent's that finds nothing: %v", n, time.Since(t0))
}

// newestFirst: from the last id given out down, then the ids above it (older, given out
// before the ids wrapped around), from the highest down; with the last id unknown, by id.
func TestNewestFirst(t *testing.T) {
	for _, c := range []struct {
		pids []int
		last int
		want []int
	}{
		{[]int{5, 100, 3, 200, 50}, 60, []int{50, 5, 3, 200, 100}},
		{[]int{5, 100, 3, 200, 50}, 0, []int{200, 100, 50, 5, 3}},
		{[]int{5, 100, 3, 200, 50}, 500, []int{200, 100, 50, 5, 3}},
		{[]int{5, 100, 3, 200, 50}, 100, []int{100, 50, 5, 3, 200}},
		{nil, 10, nil},
	} {
		if got := newestFirst(slices.Clone(c.pids), c.last); !slices.Equal(got, c.want) {
			t.Errorf("newestFirst(%v, %d) = %v, want %v", c.pids, c.last, got, c.want)
		}
	}
}
