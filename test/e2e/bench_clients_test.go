//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBenchmarkClientHealthCheck measures `claude mcp list`, the real client's health check
// (it starts each configured server, initializes it and reports it connected), in a project
// whose .mcp.json runs `limactl mcp serve mcp-e2e`: with ours on PATH, and with only Lima's
// bundled plugin, alternating, on the same VM in one run. Opt-in, no asserts on times:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -run TestBenchmarkClientHealthCheck ./test/e2e/
//
// LIMACTL_MCP_BENCH_STARTS (default 7) runs of each, after one untimed run each.
func TestBenchmarkClientHealthCheck(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the client health-check benchmark")
	}
	runs := envInt(t, "LIMACTL_MCP_BENCH_STARTS", 7)
	bin, version := installedClient(t, agentClients["claude"])
	dir, _ := configureClient(t, "claude")
	home := clientHome(t, dir)
	writeUserFile(t, home, ".claude/settings.json", `{"enableAllProjectMcpServers": true}`+"\n")
	want := "lima: limactl mcp serve " + instanceName + " - ✔ Connected"
	variants := []struct {
		label string
		env   []string
		times []time.Duration
	}{
		{label: "ours"},
		{label: "Lima", env: []string{limaPluginPath()}},
	}
	once := func(i int) time.Duration {
		out, took, err := runClientEnv(t, bin, dir, home, variants[i].env, "mcp", "list")
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("%s: claude mcp list: %v, want %q:\n%s", variants[i].label, err, want, out)
		}
		return took
	}
	for i := range variants {
		once(i)
	}
	for range runs {
		for i := range variants {
			variants[i].times = append(variants[i].times, once(i))
		}
	}
	o, l := variants[0].times, variants[1].times
	fmt.Printf("\n%s\nClaude Code %s, `claude mcp list`, %d runs each (alternating, after one untimed run each):\n\n", machine(t), version, runs)
	fmt.Printf("| measure | ours p50 | ours max | Lima p50 | Lima max | ours/Lima p50 | ours/Lima max |\n|---|---:|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| `claude mcp list`, whole process | %s | %s | %s | %s | %s | %s |\n", ms(pct(o, 50)), ms(pct(o, 100)), ms(pct(l, 50)), ms(pct(l, 100)), ratio(pct(o, 50), pct(l, 50)), ratio(pct(o, 100), pct(l, 100)))
}
