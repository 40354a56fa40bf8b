//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBenchmarkManySessions measures `status` and `review --json` of one session (whole
// processes) as the sessions of one project grow to 50 (issue 30: "status and review constant
// in sessions"). Each session is made by starting `serve --session sNN`, one call, and
// stopping it; the first one's call writes a file, which its review shows. Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -timeout 30m -run TestBenchmarkManySessions ./test/e2e/
//
// LIMACTL_MCP_BENCH_SESSIONS (default 50) is the number of sessions; the times are taken at
// 1, 10, 25 and 50 of them (those up to it, and at it). It never asserts on times; every
// session is discarded when it ends.
func TestBenchmarkManySessions(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the many-sessions benchmark")
	}
	total := envInt(t, "LIMACTL_MCP_BENCH_SESSIONS", 50)
	var marks []int
	for _, m := range []int{1, 10, 25, 50} {
		if m < total {
			marks = append(marks, m)
		}
	}
	marks = append(marks, total)
	files := map[string]string{"README.md": "# many sessions\n"}
	for i := range 20 {
		files[fmt.Sprintf("src/f%02d.txt", i)] = strings.Repeat(fmt.Sprintf("line of file %d\n", i), 50)
	}
	dir := project(t, files)
	start := time.Now()

	median := func(ds []time.Duration) time.Duration {
		c := slices.Clone(ds)
		slices.Sort(c)
		return c[len(c)/2]
	}
	type row struct {
		sessions                      int
		status, limaStatus, reviewOne time.Duration
	}
	var rows []row
	var made []time.Duration
	for i := 1; i <= total; i++ {
		name := fmt.Sprintf("s%02d", i)
		discardSessionOnCleanup(t, dir, name) // after its server stopped
		t0 := time.Now()
		a, err := startBenchAgent(t, name, dir, []string{"serve", instanceName, "--session", name})
		if err != nil {
			t.Fatalf("making session %s: %v", name, err)
		}
		a.registerStop(t)
		if i == 1 {
			if _, p := callChecked(ctxT(t, 3*time.Minute), a.s.Session, "write_file", map[string]any{"path": filepath.Join(dir, "change.txt"), "content": "changed\n"}); p != "" {
				t.Fatalf("session %s: write_file: %s", name, p)
			}
		}
		a.stop()
		made = append(made, time.Since(t0))
		if !slices.Contains(marks, i) {
			continue
		}

		r := row{sessions: i}
		var st, lst, rv []time.Duration
		for range 5 {
			t0 := time.Now()
			out, stderr, code := plugin(t, dir, "status", instanceName)
			st = append(st, time.Since(t0))
			if code != 0 || !strings.Contains(out, "[session "+name+"]") {
				t.Fatalf("status with %d sessions: exit %d, no session %s\n%s%s", i, code, name, out, stderr)
			}
			t0 = time.Now()
			out, stderr, err := runCmd(vm.Command(ctxT(t, 5*time.Minute), "limactl", "mcp", "status", instanceName))
			lst = append(lst, time.Since(t0))
			if err != nil || !strings.Contains(out, "[session "+name+"]") {
				t.Fatalf("limactl mcp status with %d sessions: %v, no session %s\n%s%s", i, err, name, out, stderr)
			}
		}
		for range 3 {
			t0 := time.Now()
			out, stderr, code := plugin(t, dir, "review", "--session", "s01", instanceName, "--json")
			rv = append(rv, time.Since(t0))
			if code != 0 || !strings.Contains(out, `"change.txt"`) {
				t.Fatalf("review --session s01 --json with %d sessions: exit %d\n%s%s", i, code, out, stderr)
			}
		}
		// Where status's time goes: its own steps, and its connection's.
		debug := vm.Command(ctxT(t, 5*time.Minute), "limactl-mcp", "status", instanceName)
		debug.Dir, debug.Env = dir, append(debug.Env, "LIMACTL_MCP_DEBUG=1")
		_, debugErr, _ := runCmd(debug)
		t.Logf("status with %d sessions, LIMACTL_MCP_DEBUG=1:\n%s", i, debugErr)
		r.status, r.limaStatus, r.reviewOne = median(st), median(lst), median(rv)
		rows = append(rows, r)
		t.Logf("%d sessions: status %v, limactl mcp status %v, review --json %v", i, st, lst, rv)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\nSessions of one project (each made by `serve --session sNN`, one call, stop: median %s, slowest %s); whole processes, medians:\n\n",
		machine(t), ms(median(made)), ms(slices.Max(made)))
	fmt.Fprintf(&b, "| sessions | `limactl-mcp status` (of 5) | growth | `limactl mcp status` (of 5) | growth | `review --session s01 --json` (of 3) | growth |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s |\n", r.sessions, ms(r.status), ratio(r.status, rows[0].status),
			ms(r.limaStatus), ratio(r.limaStatus, rows[0].limaStatus), ms(r.reviewOne), ratio(r.reviewOne, rows[0].reviewOne))
	}
	fmt.Fprintf(&b, "\nTargets with 50 sessions: status ≤ 0.5 s, review of one ≤ 0.7 s. Growth is against the first row.\n")
	t.Log(b.String())
	t.Logf("TestBenchmarkManySessions: %s before the discards", time.Since(start).Round(time.Second))
}
