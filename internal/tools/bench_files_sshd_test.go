package tools_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// TestBenchmarkFileToolsLoopback times each file tool through a real go-sdk client against a
// real sshd on loopback, through the runner (one request each) and through the no-runner
// fallback (SFTP round trips, as Lima's server does its file tools), the two taking turns call
// by call, and the floor: an empty runner round trip (a one-entry listing of /) and an MCP call
// answered without the guest. It prints a table and asserts nothing on times. Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -count=1 -v -run TestBenchmarkFileToolsLoopback ./internal/tools/
//
// LIMACTL_MCP_BENCH_N (default 200) sets the number of timed calls per tool and backend.
func TestBenchmarkFileToolsLoopback(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to time the file tools on a loopback sshd")
	}
	n := 200
	if v := os.Getenv("LIMACTL_MCP_BENCH_N"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			t.Fatalf("LIMACTL_MCP_BENCH_N=%q", v)
		}
	}
	srv := sshd.Start(t)
	dir := fmt.Sprintf("%s/bench-files-%d", srv.Home, time.Now().UnixNano())
	srv.Run(t, "bash", "-c", fmt.Sprintf(`set -e; mkdir -p %[1]s/tree; cd %[1]s
head -c 1024 /dev/zero | tr '\0' 'x' | fold -w 63 > read.txt; truncate -s 1024 read.txt
for i in $(seq 1 20); do printf 'line one\nthe needle %%d\nline three\n' "$i" > tree/file$i.txt; done
for b in runner sftp; do { head -c 1000 /dev/zero | tr '\0' 'z'; echo; echo TOKEN-A; } > replace-$b.txt; done`, dir))
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", dir) })

	type backend struct {
		label string
		conn  *guest.Conn
		sess  *mcp.ClientSession
		calls int
		edits int // replace calls: the token goes A→B, then B→A
	}
	backends := []*backend{{label: "runner"}, {label: "sftp"}}
	for _, b := range backends {
		b.conn = guesttest.Connect(t, srv, guest.Options{NoRunner: b.label == "sftp"})
		b.sess = session(t, b.conn, dir)
	}
	content := strings.Repeat(strings.Repeat("y", 63)+"\n", 16)
	type op struct {
		name, tool string
		args       func(b *backend) map[string]any
		want       string
		isError    bool
	}
	ops := []op{
		{"read_file 1 KiB", "read_file", func(*backend) map[string]any { return map[string]any{"path": dir + "/read.txt"} }, "xxxxxxxx", false},
		{"write_file 1 KiB", "write_file", func(b *backend) map[string]any {
			return map[string]any{"path": dir + "/write-" + b.label + ".txt", "content": content}
		}, "{}", false},
		{"write_file 1 KiB, 2 new parent directories", "write_file", func(b *backend) map[string]any {
			return map[string]any{"path": fmt.Sprintf("%s/p-%s-%d/a/b.txt", dir, b.label, b.calls), "content": content}
		}, "{}", false},
		{"list_directory (20 entries)", "list_directory", func(*backend) map[string]any { return map[string]any{"path": dir + "/tree"} }, "file20.txt", false},
		{"glob `*.txt` (20 files)", "glob", func(*backend) map[string]any { return map[string]any{"pattern": "*.txt", "path": dir + "/tree"} }, "file20.txt", false},
		{"replace, 1 KiB file", "replace", func(b *backend) map[string]any {
			from, to := "TOKEN-A", "TOKEN-B"
			if b.edits%2 == 1 {
				from, to = to, from
			}
			b.edits++
			return map[string]any{"file_path": dir + "/replace-" + b.label + ".txt", "old_string": from, "new_string": to}
		}, `"replacements":1`, false},
		{"floor: an MCP call answered without the guest", "read_file", func(*backend) map[string]any {
			return map[string]any{"path": dir + "/read.txt", "offset": -1}
		}, "offset must be", true},
	}
	call := func(b *backend, o op) time.Duration {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		args := o.args(b)
		b.calls++
		t0 := time.Now()
		res, err := b.sess.CallTool(ctx, &mcp.CallToolParams{Name: o.tool, Arguments: args})
		d := time.Since(t0)
		if err != nil {
			t.Fatalf("%s, %s: %v", b.label, o.name, err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError != o.isError || !strings.Contains(text, o.want) {
			t.Fatalf("%s, %s: isError=%v %.200q", b.label, o.name, res.IsError, text)
		}
		return d
	}
	pct := func(ds []time.Duration, q float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[max(int(math.Ceil(q/100*float64(len(s))))-1, 0)]
	}
	msf := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	var out strings.Builder
	fmt.Fprintf(&out, "\nN=%d per tool and backend, after 5 warm-up calls; the backends alternate call by call.\n\n", n)
	fmt.Fprintf(&out, "| operation | runner p50 | runner p90 | SFTP p50 | SFTP p90 | runner/SFTP p50 | runner/SFTP p90 |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, o := range ops {
		var times [2][]time.Duration
		for range 5 {
			for _, b := range backends {
				call(b, o)
			}
		}
		for range n {
			for i, b := range backends {
				times[i] = append(times[i], call(b, o))
			}
		}
		r50, r90, s50, s90 := pct(times[0], 50), pct(times[0], 90), pct(times[1], 50), pct(times[1], 90)
		fmt.Fprintf(&out, "| %s | %s | %s | %s | %s | %.2f× | %.2f× |\n", o.name, msf(r50), msf(r90), msf(s50), msf(s90), float64(r50)/float64(s50), float64(r90)/float64(s90))
	}
	var floor []time.Duration
	for i := range n + 5 {
		t0 := time.Now()
		if _, err := backends[0].conn.List(context.Background(), "/", 1); err != nil {
			t.Fatal(err)
		}
		if i >= 5 {
			floor = append(floor, time.Since(t0))
		}
	}
	fmt.Fprintf(&out, "| floor: an empty runner round trip (no MCP) | %s | %s | - | - | - | - |\n", msf(pct(floor, 50)), msf(pct(floor, 90)))
	fmt.Print(out.String())
}
