//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// TestBenchmarkStaging measures, on the same VM in one run: staging a generated 10k-file /
// 100 MB tree against `rsync -a --delete` over the instance's ssh (what `limactl shell --sync`
// does), then finding 10 changed files among the 10k (pending_changes on a running server) and
// opening the review of them (`review --json`, a whole process). Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -run TestBenchmarkStaging ./test/e2e/
//
// It never asserts on times. Results are in docs/benchmarks.md.
func TestBenchmarkStaging(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the staging benchmark")
	}
	dir := benchTree10k(t)
	const runs = 3

	// rsync, as `limactl shell --sync` runs it (-a --delete over the instance's ssh).
	sshConfig := filepath.Join(vm.LimaHome, instanceName, "ssh.config")
	target := guestHome(t) + "/rsync-bench"
	var rsyncTimes []time.Duration
	for range runs {
		guestShell(t, "rm -rf "+shq(target)+" && mkdir -p "+shq(target))
		cmd := vm.Command(ctxT(t, 10*time.Minute), "rsync", "-a", "--delete", "-e", "ssh -F "+sshConfig, dir+"/", "lima-"+instanceName+":"+target+"/")
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("rsync: %v\n%s", err, out)
		}
		rsyncTimes = append(rsyncTimes, time.Since(t0))
	}
	guestShell(t, "rm -rf "+shq(target))
	if got := strings.TrimSpace(guestShell(t, "true")); got != "" {
		t.Fatal(got)
	}

	// Ours: serve stages anew each time (after a discard); its log says how long staging took
	// (after connecting; rsync's ssh reuses Lima's shared connection).
	took := regexp.MustCompile(`working directory (?:staged|restaged).* took=([0-9.]+[a-zµ]+)`)
	var ourTimes []time.Duration
	var s *server
	for i := range runs {
		if i > 0 {
			// Like the emptied rsync target: remove the copy before, not during, the timing.
			if out, stderr, code := plugin(t, dir, "discard", instanceName, "--yes"); code != 0 {
				t.Fatalf("discard: exit %d\n%s\n%s", code, out, stderr)
			}
		}
		s = startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
		toolsuite.MustOK(t, s.Session, "list_directory", map[string]any{"path": dir})
		m := took.FindStringSubmatch(s.Stderr.String())
		if m == nil {
			t.Fatalf("no staging time in the log:\n%s", s.Stderr.String())
		}
		d, err := time.ParseDuration(m[1])
		mustT(t, err)
		ourTimes = append(ourTimes, d)
		if i < runs-1 {
			mustT(t, s.Session.Close())
		}
	}
	if got := strings.TrimSpace(guestShell(t, "find "+shq(dir)+" -type f | wc -l")); got != "10000" {
		t.Fatalf("staged %s files", got)
	}

	// serve's memory: its peak (VmHWM) after staging the 10k files and 100 tool calls.
	peak := servePeakAfterCalls(t, s, dir, 100)

	// Ten changed files among the 10k.
	guestShell(t, "cd "+shq(dir)+" && for d in 000 011 022 033 044 055 066 077 088 099; do echo changed >> pkg$d/file050.txt; done")
	var detect []time.Duration
	for range 5 {
		t0 := time.Now()
		r := toolsuite.MustOK(t, s.Session, "pending_changes", map[string]any{})
		detect = append(detect, time.Since(t0))
		if n := len(r.Structured["changes"].([]any)); n != 10 {
			t.Fatalf("pending_changes found %d changes, want 10", n)
		}
	}
	var reviewOpen []time.Duration
	for range 3 {
		t0 := time.Now()
		out, stderr, code := plugin(t, dir, "review", instanceName, "--json")
		reviewOpen = append(reviewOpen, time.Since(t0))
		if code != 0 || strings.Count(out, `"kind": "modified"`) != 10 {
			t.Fatalf("review --json: exit %d\n%s\n%s", code, out, stderr)
		}
	}
	var statusTimes []time.Duration
	for range 3 {
		t0 := time.Now()
		out, stderr, code := plugin(t, dir, "status", instanceName, "--json")
		statusTimes = append(statusTimes, time.Since(t0))
		if code != 0 || !strings.Contains(out, `"pending_total": 10`) {
			t.Fatalf("status --json: exit %d\n%s\n%s", code, out, stderr)
		}
	}
	sessions, _ := os.ReadDir(filepath.Join(vm.LimaHome, instanceName, "limactl-mcp", "sessions"))
	// The review's own work on a connection that is already open (Build: the scan, the
	// hashes, reading the 10 files from the guest, the host's side), apart from the SSH login
	// a new process pays.
	conn := rootConn(t)
	_, err := conn.Home(ctxT(t, time.Minute))
	mustT(t, err)
	store := staging.StoreFor(filepath.Join(vm.LimaHome, instanceName))
	st, base, err := store.Load(dir)
	mustT(t, err)
	sess := staging.Attach(conn, store, st, base)
	var build []time.Duration
	for range 5 {
		t0 := time.Now()
		cs, err := review.Build(ctxT(t, time.Minute), sess, nil)
		mustT(t, err)
		build = append(build, time.Since(t0))
		if len(cs.Items) != 10 {
			t.Fatalf("review.Build found %d items", len(cs.Items))
		}
	}
	med := func(ds []time.Duration) time.Duration {
		c := append([]time.Duration(nil), ds...)
		sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
		return c[len(c)/2]
	}
	rsyncVersion, _ := exec.Command("rsync", "--version").Output()
	t.Logf("\nStaging a 10,000-file / 100 MiB tree (median of %d; %s):\n"+
		"| | median | runs |\n|---|---|---|\n"+
		"| rsync -a --delete over the instance's ssh | %s | %v |\n"+
		"| limactl-mcp staging (one tar stream) | %s | %v |\n"+
		"| ratio rsync / ours | %.1fx | |\n\n"+
		"Finding 10 changed files among 10,000 (pending_changes, running server): median %s %v\n"+
		"Opening the review of them (`review --json`, whole process incl. connect): median %s %v\n"+
		"`status --json` (this session and %d others of the instance), whole process: median %s %v\n"+
		"Building that review on an open connection (review.Build): median %s %v\n"+
		"serve's peak RSS (VmHWM) after staging the 10,000 files and 100 tool calls: %s\n",
		runs, strings.SplitN(string(rsyncVersion), "\n", 2)[0],
		med(rsyncTimes).Round(time.Millisecond), rsyncTimes, med(ourTimes).Round(time.Millisecond), ourTimes,
		float64(med(rsyncTimes))/float64(med(ourTimes)),
		med(detect).Round(time.Millisecond), detect, med(reviewOpen).Round(time.Millisecond), reviewOpen,
		len(sessions)-1, med(statusTimes).Round(time.Millisecond), statusTimes,
		med(build).Round(time.Millisecond), build, peak)
}

// servePeakAfterCalls makes n mixed tool calls on s (commands, reads, writes, listings, globs,
// searches over the staged tree in dir), each checked, and returns the server's peak resident
// memory (VmHWM, /proc on the host) and its resident memory now.
func servePeakAfterCalls(t *testing.T, s *server, dir string, n int) string {
	t.Helper()
	for i := range n {
		var name string
		var args map[string]any
		switch i % 6 {
		case 0:
			name, args = "run_shell_command", map[string]any{"command": []string{"ls", "pkg001"}, "directory": dir}
		case 1:
			name, args = "read_file", map[string]any{"path": filepath.Join(dir, fmt.Sprintf("pkg%03d/file%03d.txt", i%100, i%100))}
		case 2:
			name, args = "write_file", map[string]any{"path": filepath.Join(dir, "notes", fmt.Sprintf("n%03d.txt", i)), "content": strings.Repeat("note\n", 100)}
		case 3:
			name, args = "list_directory", map[string]any{"path": filepath.Join(dir, fmt.Sprintf("pkg%03d", i%100))}
		case 4:
			name, args = "glob", map[string]any{"pattern": "pkg00*/file00*.txt", "path": dir}
		case 5:
			name, args = "search_file_content", map[string]any{"pattern": "abcde", "path": filepath.Join(dir, "pkg002")}
		}
		toolsuite.MustOK(t, s.Session, name, args)
	}
	// The notes are not part of what the rest of the benchmark counts.
	toolsuite.MustOK(t, s.Session, "run_shell_command", map[string]any{"command": []string{"rm", "-r", "notes"}, "directory": dir})
	pid := s.PID
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "runuser" {
		pid = childPID(t, pid) // started as the user, through runuser
	}
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != "limactl-mcp" {
		t.Fatalf("process %d is %q, not the server", pid, comm)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	mustT(t, err)
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `:\s+(\d+) kB`).FindSubmatch(status)
		if m == nil {
			t.Fatalf("no %s in /proc/%d/status", name, pid)
		}
		var kb int
		fmt.Sscan(string(m[1]), &kb)
		return fmt.Sprintf("%.1f MB", float64(kb)/1024)
	}
	return field("VmHWM") + " (now " + field("VmRSS") + ")"
}
