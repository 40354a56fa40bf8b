//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchmarkShell measures `limactl mcp shell` on the same VM in the same run:
//
//   - `limactl mcp shell INSTANCE -- true` on an already-staged session against plain
//     `limactl shell INSTANCE true`, taking turns, whole processes (the target: p50 within
//     1.5×);
//   - in a tree of 10,000 files, a command that changes 10 of them, without a terminal: the
//     run ends with the review's summary (the change detection), against the same with
//     `-- true` (nothing changed: no detection), and against Lima's `limactl shell --sync . -y`
//     on a copy of the same tree.
//
// It prints a table and asserts nothing on times; it fails if a command fails. Opt-in:
//
//	LIMACTL_MCP_BENCH=1 LIMACTL_MCP_E2E_KEEP=1 go test -tags e2e -count=1 -v -run 'TestBenchmarkShell' ./test/e2e/
//
// LIMACTL_MCP_BENCH_N (default 15) is the number of timed runs of each command of the first
// part; LIMACTL_MCP_BENCH_TREE_N (default 5) of the second.
func TestBenchmarkShell(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the shell benchmark")
	}
	n := envInt(t, "LIMACTL_MCP_BENCH_N", 15)
	treeN := envInt(t, "LIMACTL_MCP_BENCH_TREE_N", 5)
	timed := func(dir string, name string, args ...string) (time.Duration, string) {
		t.Helper()
		cmd := vm.Command(ctxT(t, 10*time.Minute), name, args...)
		cmd.Dir = dir
		t0 := time.Now()
		stdout, stderr, err := runCmd(cmd)
		d := time.Since(t0)
		if err != nil {
			t.Fatalf("%s %v: %v\n%s\n%s", name, args, err, stdout, stderr)
		}
		return d, stderr
	}

	small := project(t, map[string]string{"hello.txt": "hello\n"})
	discardOnCleanup(t, small)
	timed(small, "limactl", "mcp", "shell", instanceName, "--", "true") // stages
	var ours, lima []time.Duration
	for i := 0; i < n; i++ {
		d, _ := timed(small, "limactl", "mcp", "shell", instanceName, "--", "true")
		ours = append(ours, d)
		d, _ = timed(small, "limactl", "shell", instanceName, "true")
		lima = append(lima, d)
	}

	// 10,000 files in 100 directories.
	files := map[string]string{}
	for d := 0; d < 100; d++ {
		for f := 0; f < 100; f++ {
			files[fmt.Sprintf("d%02d/f%02d.txt", d, f)] = fmt.Sprintf("file %d %d\n", d, f)
		}
	}
	tree := project(t, files)
	discardOnCleanup(t, tree)
	stage, _ := timed(tree, "limactl", "mcp", "shell", instanceName, "--", "true")
	edit := func(i int) string {
		return fmt.Sprintf(`for d in 00 11 22 33 44 55 66 77 88 99; do echo "edit %d" >> d$d/f$d.txt; done`, i)
	}
	var treeTrue, treeEdit, limaSync []time.Duration
	for i := 0; i < treeN; i++ {
		// The probe counts changes made up to 2 s before the command's start: let the last
		// edits age, so that this measures the run where nothing changed.
		time.Sleep(2500 * time.Millisecond)
		d, _ := timed(tree, "limactl", "mcp", "shell", instanceName, "--", "true")
		treeTrue = append(treeTrue, d)
		// Without a terminal and without --yes: the summary of the review, nothing written
		// (exit 0: the command's).
		d, stderr := timed(tree, "limactl", "mcp", "shell", instanceName, "--", "sh", "-c", edit(i))
		if !strings.Contains(stderr, "10 files changed") {
			t.Fatalf("the review after 10 edits:\n%s", stderr)
		}
		treeEdit = append(treeEdit, d)
	}
	// Lima's own --sync, on a copy of the tree (it writes back to the host and removes its guest
	// copy at the end).
	limaTree := project(t, files)
	for i := 0; i < treeN; i++ {
		d, _ := timed(limaTree, "limactl", "shell", "--sync", ".", "-y", instanceName, "sh", "-c", edit(i))
		limaSync = append(limaSync, d)
	}
	if got := readHost(t, filepath.Join(limaTree, "d00/f00.txt")); !strings.Contains(got, "edit 0") {
		t.Errorf("limactl shell --sync did not bring the edit back: %q", got)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n| command | N | p50 | p90 |\n|---|---|---|---|\n")
	row := func(name string, ds []time.Duration) {
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", name, len(ds), ms(pct(ds, 50)), ms(pct(ds, 90)))
	}
	row("`limactl mcp shell mcp-e2e -- true` (staged, 1 file)", ours)
	row("`limactl shell mcp-e2e true`", lima)
	fmt.Fprintf(&b, "\nratio of p50, ours/Lima: %.2f×\n\n| 10,000-file tree | N | p50 | p90 |\n|---|---|---|---|\n", float64(pct(ours, 50))/float64(pct(lima, 50)))
	fmt.Fprintf(&b, "| first `limactl mcp shell -- true` (stages) | 1 | %s | |\n", ms(stage))
	row("`limactl mcp shell -- true` (nothing changed)", treeTrue)
	row("`limactl mcp shell -- sh -c '10 edits'` (review summary, no terminal)", treeEdit)
	row("`limactl shell --sync . -y mcp-e2e sh -c '10 edits'`", limaSync)
	fmt.Fprintf(&b, "\nchange detection of 10 changes in 10,000 files (p50 of the edit run minus p50 of `-- true`): %s\n", ms(pct(treeEdit, 50)-pct(treeTrue, 50)))
	fmt.Print(b.String())
}
