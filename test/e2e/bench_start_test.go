//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBenchmarkStart measures what a new process pays, ours against Lima's bundled server, both
// started as a client starts them (`limactl mcp serve INSTANCE`; Lima's is the one limactl
// finds when ours is not on PATH), on the same VM in the same run, alternating:
//
//   - process start → initialize → the first run_shell_command(["true"]) result;
//   - the client closing stdin → the process gone (go-sdk's CommandTransport.Close);
//   - `limactl mcp status INSTANCE` in a directory with a staged session, whole process (ours
//     only: Lima has no such command).
//
// It prints a table and asserts nothing on times; it fails if a call fails or if our server
// logs an ERROR line on the way out. Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -run 'TestBenchmarkStart' ./test/e2e/
//
// LIMACTL_MCP_BENCH_STARTS (default 7) is the number of cold starts of each server, after one
// untimed start each (ours stages the directory then; later starts resume that session).
func TestBenchmarkStart(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the start benchmark against Lima's bundled server")
	}
	starts := envInt(t, "LIMACTL_MCP_BENCH_STARTS", 7)
	data := sharedDir(t)
	if err := os.WriteFile(filepath.Join(data, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type srv struct {
		label string
		env   []string
		// times
		first, exit []time.Duration
	}
	servers := []*srv{
		{label: "ours"},
		{label: "Lima", env: []string{limaPluginPath()}},
	}
	args := map[string]any{"command": []string{"true"}, "directory": "/"}
	once := func(s *srv, check bool) (first, exit time.Duration, stderr string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := vm.Command(ctx, "limactl", "mcp", "serve", instanceName)
		cmd.Env = append(cmd.Env, s.env...)
		cmd.Dir = data
		var errBuf lockedBuffer
		cmd.Stderr = &errBuf
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		t0 := time.Now()
		sess, err := client.Connect(ctxT(t, 2*time.Minute), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("%s: connect: %v\n%s", s.label, err, errBuf.String())
		}
		res, err := sess.CallTool(ctxT(t, 2*time.Minute), &mcp.CallToolParams{Name: "run_shell_command", Arguments: args})
		first = time.Since(t0)
		if err != nil || res.IsError || !strings.Contains(firstText(res), `"exit_code":0`) {
			t.Fatalf("%s: first call: %v %v\n%s", s.label, err, res, errBuf.String())
		}
		if check { // only ours has `replace`
			if has := slices.Contains(toolNames(t, sess), "replace"); has != (s.label == "ours") {
				t.Fatalf("the server run as %q is not %s's", s.label, s.label)
			}
		}
		t1 := time.Now()
		_ = sess.Close() // closes stdin and waits for the process to exit
		exit = time.Since(t1)
		return first, exit, errBuf.String()
	}
	for _, s := range servers {
		once(s, true)
	}
	for i := range starts {
		for _, s := range servers {
			first, exit, stderr := once(s, false)
			s.first, s.exit = append(s.first, first), append(s.exit, exit)
			if s.label == "ours" && strings.Contains(stderr, "level=ERROR") {
				t.Errorf("start %d: our server logged an ERROR:\n%s", i, stderr)
			}
		}
	}

	var status []time.Duration
	for range starts {
		cmd := vm.Command(ctxT(t, 2*time.Minute), "limactl", "mcp", "status", instanceName)
		cmd.Dir = data
		t0 := time.Now()
		out, stderr, err := runCmd(cmd)
		status = append(status, time.Since(t0))
		if err != nil || !strings.Contains(out+stderr, data) {
			t.Fatalf("status: %v\n%s\n%s", err, out, stderr)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", machine(t))
	fmt.Fprintf(&b, "N=%d cold starts per server (alternating, after one untimed start each); both started as `limactl mcp serve %s`.\n\n", starts, instanceName)
	fmt.Fprintf(&b, "| measure | ours p50 | ours max | Lima p50 | Lima max | ours/Lima p50 | ours/Lima max |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, o, l []time.Duration) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", name, ms(pct(o, 50)), ms(pct(o, 100)), ms(pct(l, 50)), ms(pct(l, 100)), ratio(pct(o, 50), pct(l, 50)), ratio(pct(o, 100), pct(l, 100)))
	}
	row("process start → first `run_shell_command([\"true\"])` result", servers[0].first, servers[1].first)
	row("stdin closed → process gone", servers[0].exit, servers[1].exit)
	// status scans every staged session of the instance: say how many there were.
	sessions, _ := os.ReadDir(filepath.Join(vm.LimaHome, instanceName, "limactl-mcp", "sessions"))
	fmt.Fprintf(&b, "| `limactl mcp status %s` (%d staged sessions), whole process | %s | %s | - | - | - | - |\n", instanceName, len(sessions), ms(pct(status, 50)), ms(pct(status, 100)))
	fmt.Print(b.String())
}

// limaPluginPath is the PATH entry under which `limactl mcp` runs Lima's bundled plugin: limactl
// looks for a plugin in its own directory, then PATH, then its libexec, so without our bin
// directory on PATH it runs its bundled limactl-mcp.
func limaPluginPath() string {
	var dirs []string
	for _, p := range strings.Split(envValueOf(vm.Env, "PATH"), ":") {
		if p != vm.BinDir {
			dirs = append(dirs, p)
		}
	}
	return "PATH=" + strings.Join(dirs, ":")
}

// envValueOf is the value of key in env (the last one wins, as for exec).
func envValueOf(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
