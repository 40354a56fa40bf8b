package servecmd

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
)

// benchCall records one call as the middleware does after it returns: the arguments and
// result of a typical call of tool.
func benchCall(b *testing.B, tool string, args map[string]any, out any) {
	raw, _ := json.Marshal(args)
	res := &mcp.CallToolResult{}
	if out != nil {
		data, _ := json.Marshal(out)
		res.StructuredContent = json.RawMessage(data)
		res.Content = []mcp.Content{&mcp.TextContent{Text: string(data)}}
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: raw}}
	r := newRecorder(timeline.Open(b.TempDir(), "serve", timeline.FromEnviron([]string{"API_TOKEN=sk-abcdefghijklmnop"})), "/w", "/w")
	start := time.Now()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		r.record(req, res, nil, start, 3*time.Millisecond)
	}
	// The machine is shared: the CPU time the process spent is the cost, the wall time also
	// counts waiting for a core.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time this process has used (user and system), in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// What recording adds to a tool call (docs/benchmarks.md): a write_file of 10 kB, a
// run_shell_command with 20 kB of output, a read_file of 64 kB.
func BenchmarkRecordWriteFile(b *testing.B) {
	benchCall(b, "write_file", map[string]any{"path": "/w/src/a.go", "content": strings.Repeat("package a // a line of code\n", 360)}, struct{}{})
}

func BenchmarkRecordRunShellCommand(b *testing.B) {
	zero := 0
	benchCall(b, "run_shell_command", map[string]any{"command": []string{"sh", "-c", "go test ./... 2>&1 | tail -50"}, "directory": "/w"},
		&tools.RunShellCommandResult{Stdout: strings.Repeat("ok  \tgithub.com/x/y/pkg\t0.012s\n", 600), ExitCode: &zero})
}

func BenchmarkRecordReadFile(b *testing.B) {
	benchCall(b, "read_file", map[string]any{"path": "/w/src/a.go"}, map[string]any{"content": strings.Repeat("x", 64<<10)})
}

// The same run_shell_command under a network policy: the call also pokes the network
// recorder (a send on a channel that never waits), whose read of the guest's record, slow
// here (50 ms), runs in its own goroutine and never on the call's path.
func BenchmarkRecordRunShellCommandNetwork(b *testing.B) {
	zero := 0
	raw, _ := json.Marshal(map[string]any{"command": []string{"sh", "-c", "go test ./... 2>&1 | tail -50"}, "directory": "/w"})
	data, _ := json.Marshal(&tools.RunShellCommandResult{Stdout: strings.Repeat("ok  \tgithub.com/x/y/pkg\t0.012s\n", 600), ExitCode: &zero})
	res := &mcp.CallToolResult{StructuredContent: json.RawMessage(data), Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "run_shell_command", Arguments: raw}}
	tl := timeline.Open(b.TempDir(), "serve", timeline.FromEnviron([]string{"API_TOKEN=sk-abcdefghijklmnop"}))
	r := newRecorder(tl, "/w", "/w")
	r.net = newNetRecorder(tl, func(ctx context.Context) (netpolicy.Record, error) {
		time.Sleep(50 * time.Millisecond)
		return netpolicy.Record{}, nil
	}, nil, nil).start()
	defer r.net.stop()
	start := time.Now()
	b.ResetTimer()
	wall := time.Now()
	for b.Loop() {
		r.record(req, res, nil, start, 3*time.Millisecond)
	}
	b.ReportMetric(float64(time.Since(wall).Nanoseconds())/float64(b.N), "wall-ns/op")
}
