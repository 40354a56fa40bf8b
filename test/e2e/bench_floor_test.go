//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// TestBenchmarkRunnerFloor measures the runner's requests on the fast lane from this process
// (no MCP, no serve), back to back and with the guest left idle 10 ms before each (as between
// an agent's calls, and as TestBenchmarkTools has it: the servers alternate), to say what the
// floor of a file tool is and what the guest's own work adds. Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -run TestBenchmarkRunnerFloor ./test/e2e/
//
// It never asserts on times. Results are in docs/benchmarks.md.
func TestBenchmarkRunnerFloor(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the benchmark")
	}
	n := envInt(t, "LIMACTL_MCP_BENCH_N", 60)
	c := rootConnWith(t, guest.Options{NoLoginShell: true, LaneHost: netpolicy.RelayHost})
	ctx := ctxT(t, 10*time.Minute)
	dir := strings.TrimSpace(guestShell(t, "mkdir -p ~/floor && cd ~/floor && for i in $(seq 20); do head -c 1024 /dev/urandom | base64 -w0 | head -c 1024 > f$i.txt; done; ln -sf f1.txt lnk; pwd"))
	if _, err := c.List(ctx, "/", 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the lane opens in the background (its first calls go on the channel)
	data := make([]byte, 1024)
	ops := []struct {
		name string
		f    func() error
	}{
		{"empty round trip (a one-entry listing of /)", func() error { _, err := c.List(ctx, "/", 1); return err }},
		{"read 1 KiB", func() error {
			r, err := c.OpenFollowing(ctx, dir+"/f1.txt")
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = io.ReadAll(r)
			return err
		}},
		{"list 20 entries", func() error { _, err := c.List(ctx, dir, 1000); return err }},
		{"write 1 KiB over a file (a new file renamed over it)", func() error { return c.WriteFile(ctx, dir+"/w.txt", data, 0o644, true) }},
		{"write 1 KiB through a link (in place)", func() error { return c.WriteFile(ctx, dir+"/lnk", data, 0o644, true) }},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nRunner requests on the fast lane, from this process (%s), N=%d each:\n\n", machine(t), n)
	fmt.Fprintf(&b, "| request | back to back p50 | p90 | 10 ms idle before each p50 | p90 |\n|---|---:|---:|---:|---:|\n")
	for _, o := range ops {
		var times [2][]time.Duration
		for i, gap := range []time.Duration{0, 10 * time.Millisecond} {
			for range n {
				time.Sleep(gap)
				t0 := time.Now()
				if err := o.f(); err != nil {
					t.Fatalf("%s: %v", o.name, err)
				}
				times[i] = append(times[i], time.Since(t0))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", o.name, ms(pct(times[0], 50)), ms(pct(times[0], 90)), ms(pct(times[1], 50)), ms(pct(times[1], 90)))
	}
	fmt.Print(b.String())
}
