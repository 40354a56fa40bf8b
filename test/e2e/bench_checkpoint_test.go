//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// TestBenchmarkCheckpoints measures checkpoint and restore_checkpoint on a generated 10k-file /
// 100 MB tree (the staging benchmark's), as the agent calls them (MCP round trip included):
// the first checkpoint (every file copied into the store), then checkpoints and restores with
// 10 files changed, a restore with nothing to do, and review --since (a whole process). Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -run TestBenchmarkCheckpoints ./test/e2e/
//
// It never asserts on times. Results are in docs/benchmarks.md.
func TestBenchmarkCheckpoints(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the checkpoint benchmark")
	}
	dir := benchTree10k(t)
	discardOnCleanup(t, dir)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	toolsuite.MustOK(t, s.Session, "list_directory", map[string]any{"path": dir})

	timed := func(name string, args map[string]any) (time.Duration, map[string]any) {
		t.Helper()
		t0 := time.Now()
		r := toolsuite.MustOK(t, s.Session, name, args)
		return time.Since(t0), r.Structured
	}
	change10 := func(round int) {
		t.Helper()
		var cmds []string
		for i := range 10 {
			cmds = append(cmds, fmt.Sprintf("echo round %d >> pkg%03d/file%03d.txt", round, (round*10+i)%100, i)) // benchTree10k has 100 directories
		}
		shellOK(t, s.Session, dir, strings.Join(cmds, " && "))
	}

	first, r := timed("checkpoint", map[string]any{"label": "first"})
	t.Logf("first checkpoint: %v", r)
	const runs = 5
	var cps, restores []time.Duration
	lastID := r["id"]
	for round := range runs {
		change10(round)
		d, r := timed("checkpoint", map[string]any{})
		cps = append(cps, d)
		if round == 0 {
			t.Logf("checkpoint after 10 changes: %v", r)
		}
		lastID = r["id"]
	}
	for round := range runs {
		change10(100 + round)
		d, r := timed("restore_checkpoint", map[string]any{"id": lastID})
		restores = append(restores, d)
		if round == 0 {
			t.Logf("restore of 10 changes: total %v", r["total"])
		}
	}
	noop, _ := timed("restore_checkpoint", map[string]any{"id": lastID})
	change10(200)
	t0 := time.Now()
	out, stderr, code := plugin(t, dir, "review", instanceName, "--since", fmt.Sprint(lastID))
	since := time.Since(t0)
	if code != 0 {
		t.Fatalf("review --since: exit %d\n%s\n%s", code, out, stderr)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nCheckpoints of a 10,000-file / 100 MB staged tree (%s), %d runs each, MCP call round trip:\n\n", machine(t), runs)
	fmt.Fprintf(&b, "| operation | median | p100 |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| first checkpoint (100 MB copied into the store) | %s | %s |\n", ms(first), ms(first))
	fmt.Fprintf(&b, "| checkpoint, 10 files changed | %s | %s |\n", ms(pct(cps, 50)), ms(pct(cps, 100)))
	fmt.Fprintf(&b, "| restore_checkpoint, 10 files changed | %s | %s |\n", ms(pct(restores, 50)), ms(pct(restores, 100)))
	fmt.Fprintf(&b, "| restore_checkpoint, nothing to do | %s | %s |\n", ms(noop), ms(noop))
	fmt.Fprintf(&b, "| `review --since` (whole process), 10 files changed | %s | %s |\n", ms(since), ms(since))
	fmt.Print(b.String())
}
