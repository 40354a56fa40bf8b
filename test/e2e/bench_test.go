//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// TestBenchmarkTools measures our server against Lima's bundled one (v2.2.0), on the same VM in
// the same run, and prints a table. It never asserts on times; it fails only if a call fails.
// Opt-in, because it takes a minute or two:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -run 'TestBenchmarkTools' ./test/e2e/
//
// LIMACTL_MCP_BENCH_N (default 50) is the number of timed calls per tool and server, after 3
// warm-up calls; LIMACTL_MCP_BENCH_STARTS (default 5) the number of cold starts. Results are in
// docs/benchmarks.md.
func TestBenchmarkTools(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the benchmark against Lima's bundled server")
	}
	n := envInt(t, "LIMACTL_MCP_BENCH_N", 50)
	starts := envInt(t, "LIMACTL_MCP_BENCH_STARTS", 5)
	const warmup = 3

	// The data, in a guest directory that both servers use by absolute path.
	data := sharedDir(t)
	guestShell(t, fmt.Sprintf(`set -e
cd %s
head -c 1024 /dev/zero | tr '\0' 'x' | fold -w 63 > read.txt
truncate -s 1024 read.txt
mkdir tree
for i in $(seq 1 20); do printf 'line one\nthe needle %%d\nline three\n' "$i" > tree/file$i.txt; done
`, shq(data)))
	if got := strings.TrimSpace(guestShell(t, "stat -c %s "+shq(data+"/read.txt"))); got != "1024" {
		t.Fatalf("read.txt is %s bytes, want 1024", got)
	}
	content1K := strings.Repeat(strings.Repeat("y", 63)+"\n", 16) // 1024 bytes

	type server struct {
		label string
		bin   string
		sess  *mcp.ClientSession
	}
	servers := []*server{
		{label: "ours", bin: ourBin},
		{label: "Lima", bin: limaBin},
	}
	for _, s := range servers {
		s.sess = startServer(t, nil, s.bin, "serve", instanceName).Session
	}
	if !slices.Contains(toolNames(t, servers[0].sess), "replace") || slices.Contains(toolNames(t, servers[1].sess), "replace") {
		t.Fatalf("the servers are not ours and Lima's (only ours has `replace`)")
	}

	type op struct {
		name string
		args func(s *server) map[string]any
		want string // the text result must contain this
		// limaNote, when set, says why Lima's result is not checked (and is footnoted).
		limaNote string
		// oursOnly: Lima's server has no such tool (replace), or the row is ours alone.
		oursOnly bool
		// wantError: the call must be an isError result (the floor of a call that never
		// reaches the guest).
		wantError bool
	}
	// replace toggles one word of its own file between two values, so that every call edits.
	guestShell(t, fmt.Sprintf("cd %s && { head -c 1000 /dev/zero | tr '\\0' 'z'; echo; echo TOKEN-A; } > replace-ours.txt", shq(data)))
	replaceCalls := 0
	parents := 0
	ops := []op{
		{"run_shell_command `true`", func(*server) map[string]any {
			return map[string]any{"command": []string{"true"}, "directory": "/"}
		}, `"exit_code":0`, "", false, false},
		{"read_file 1 KiB", func(*server) map[string]any {
			return map[string]any{"path": data + "/read.txt"}
		}, "xxxxxxxx", "", false, false},
		{"write_file 1 KiB", func(s *server) map[string]any {
			return map[string]any{"path": data + "/write-" + s.label + ".txt", "content": content1K}
		}, "", "", false, false},
		{"write_file 1 KiB, 2 new parent directories", func(s *server) map[string]any {
			parents++
			return map[string]any{"path": fmt.Sprintf("%s/parents-%s-%d/a/b.txt", data, s.label, parents), "content": content1K}
		}, "", "", false, false},
		{"replace 1 KiB file, one occurrence", func(*server) map[string]any {
			replaceCalls++
			from, to := "TOKEN-A", "TOKEN-B"
			if replaceCalls%2 == 0 {
				from, to = to, from
			}
			return map[string]any{"file_path": data + "/replace-ours.txt", "old_string": from, "new_string": to}
		}, `"replacements":1`, "", true, false},
		{"floor: read_file refused before the guest (offset -1)", func(*server) map[string]any {
			return map[string]any{"path": data + "/read.txt", "offset": -1}
		}, "offset must be", "", true, true},
		{"list_directory (20 entries)", func(*server) map[string]any {
			return map[string]any{"path": data + "/tree"}
		}, "file20.txt", "", false, false},
		{"glob `*.txt` (20 files)", func(*server) map[string]any {
			return map[string]any{"pattern": "*.txt", "path": data + "/tree"}
		}, "file20.txt", "", false, false},
		{"search_file_content (20 files)", func(*server) map[string]any {
			return map[string]any{"pattern": "needle 1[0-9]", "path": data + "/tree"}
		}, "file19.txt", "Lima's search_file_content returns an empty git_grep_output (and no error) in this guest: " +
			"it runs `git grep -n --no-index PATTERN /absolute/path`, which Debian 12's git 2.39 aborts on " +
			"(`BUG: environment.c:211: git environment hasn't been setup`, exit 134); its time is that of the failing call", false, false},
	}
	call := func(s *server, o op) time.Duration {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		tool := strings.Fields(strings.TrimPrefix(o.name, "floor: "))[0]
		t0 := time.Now()
		res, err := s.sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: o.args(s)})
		d := time.Since(t0)
		if err != nil {
			t.Fatalf("%s: %s: %v", s.label, o.name, err)
		}
		want := o.want
		if s.label == "Lima" && o.limaNote != "" {
			want = ""
		}
		if text := firstText(res); res.IsError != o.wantError || !strings.Contains(text, want) {
			t.Fatalf("%s: %s: isError=%v, result %.300q does not contain %q", s.label, o.name, res.IsError, text, o.want)
		}
		return d
	}

	type row struct {
		name  string
		note  string
		times [2][]time.Duration
	}
	var rows []row
	for _, o := range ops {
		takers := servers
		if o.oursOnly {
			takers = servers[:1]
		}
		for _, s := range takers {
			for range warmup {
				call(s, o)
			}
		}
		r := row{name: o.name, note: o.limaNote}
		// Alternate the servers call by call, so that both see the same background load.
		for range n {
			for i, s := range takers {
				r.times[i] = append(r.times[i], call(s, o))
			}
		}
		rows = append(rows, r)
		if len(r.times[1]) > 0 {
			t.Logf("%s: ours p50 %s, Lima p50 %s", o.name, ms(pct(r.times[0], 50)), ms(pct(r.times[1], 50)))
		}
	}
	// The floor of a file tool: one round trip on the runner's channel that does nothing (a
	// one-entry listing of /, the runner client's ping), from this process over a connection of
	// its own, as serve's calls run after its handoff; add the floor row above (an MCP call
	// answered without the guest) for the floor of a tool call.
	// The same on the fast lane (guest.Options.LaneHost, as serve's connections have it): the
	// runner's connection to this host through the VM's NAT; its first calls go on the
	// channel while the lane opens.
	floorOf := func(name string, c *guest.Conn) row {
		if _, err := c.List(ctxT(t, time.Minute), "/", 1); err != nil {
			t.Fatalf("runner round trip: %v", err)
		}
		time.Sleep(2 * time.Second)
		r := row{name: name}
		for range warmup + n {
			t0 := time.Now()
			if _, err := c.List(ctxT(t, time.Minute), "/", 1); err != nil {
				t.Fatalf("runner round trip: %v", err)
			}
			r.times[0] = append(r.times[0], time.Since(t0))
		}
		r.times[0] = r.times[0][warmup:]
		return r
	}
	rows = append(rows,
		floorOf("floor: an empty runner round trip (not MCP; this process, own SSH connection)", rootConn(t)),
		floorOf("floor: an empty runner round trip on the fast lane (not MCP; this process)", rootConnWith(t, guest.Options{NoLoginShell: true, LaneHost: netpolicy.RelayHost})))
	if content := strings.TrimSpace(guestShell(t, "cat "+shq(data+"/write-ours.txt")+" | wc -c")); content != "1024" {
		t.Errorf("write_file wrote %s bytes, want 1024", content)
	}

	// Cold start: process start, initialize, first run_shell_command result.
	startRow := row{name: "cold start → first `true` result"}
	for range starts {
		for i, s := range servers {
			ctx, cancel := context.WithCancel(context.Background())
			cmd := vm.Command(ctx, s.bin, "serve", instanceName)
			cmd.Dir = data
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			t0 := time.Now()
			sess, err := client.Connect(ctxT(t, 2*time.Minute), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				cancel()
				t.Fatalf("%s: connect: %v", s.label, err)
			}
			res, err := sess.CallTool(ctxT(t, 2*time.Minute), &mcp.CallToolParams{Name: "run_shell_command", Arguments: ops[0].args(s)})
			d := time.Since(t0)
			if err != nil || res.IsError {
				t.Fatalf("%s: first call: %v %v", s.label, err, res)
			}
			startRow.times[i] = append(startRow.times[i], d)
			_ = sess.Close()
			cancel()
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", machine(t))
	fmt.Fprintf(&b, "N=%d timed calls per tool and server after %d warm-up calls (servers alternate call by call); cold start N=%d.\n\n", n, warmup, starts)
	fmt.Fprintf(&b, "| operation | ours p50 | ours p90 | Lima p50 | Lima p90 | Lima/ours p50 | Lima/ours p90 |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|\n")
	var notes []string
	for _, r := range append(rows, startRow) {
		if len(r.times[0]) == 0 {
			continue
		}
		if r.note != "" {
			notes = append(notes, r.note)
			r.name += fmt.Sprintf(" [%d]", len(notes))
		}
		o50, o90 := pct(r.times[0], 50), pct(r.times[0], 90)
		if len(r.times[1]) == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | - | - | - | - |\n", r.name, ms(o50), ms(o90))
			continue
		}
		l50, l90 := pct(r.times[1], 50), pct(r.times[1], 90)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.name, ms(o50), ms(o90), ms(l50), ms(l90), ratio(l50, o50), ratio(l90, o90))
	}
	for i, note := range notes {
		fmt.Fprintf(&b, "\n[%d] %s.\n", i+1, note)
	}
	fmt.Print(b.String())
}

// pct is the q-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q/100*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	r := float64(a) / float64(b)
	if r >= 10 {
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.1f×", r)
}

func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", key, v)
	}
	return n
}

// machine describes the host and the guest, for the record.
func machine(t *testing.T) string {
	t.Helper()
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	qemu := "qemu-system-x86_64 (version unknown)"
	if out, err := exec.Command("qemu-system-x86_64", "--version").Output(); err == nil {
		qemu, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	}
	limaVer, _, _ := runCmd(vm.Command(ctxT(t, time.Minute), "limactl", "--version"))
	guest := strings.TrimSpace(guestShell(t, `echo "$(nproc) vCPU, $(free -m | awk '/^Mem:/{print $2}') MiB, $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r)"`))
	return fmt.Sprintf("Host: %s, %d CPUs (%s/%s). %s; %s. Guest: %s; QEMU TCG (no KVM).",
		cpu, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, strings.TrimSpace(limaVer), qemu, guest)
}
