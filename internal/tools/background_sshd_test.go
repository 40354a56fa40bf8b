package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// smallBackground keeps 8 KiB of the head and 12 KiB of the tail, 3 running, 5 kept.
var smallBackground = tools.BackgroundLimits{MaxRunning: 3, MaxKept: 5, SegmentBytes: 4096, HeadSegments: 2, TailSegments: 3, ReadDefault: 1024, ReadMax: 64 << 10}

// callJSON calls a tool and decodes its structured result into out; it returns the error
// text of an isError result ("" otherwise).
func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	if out != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v (%s)", name, err, raw)
		}
	}
	return ""
}

type bgOutput struct {
	tools.ReadBackgroundOutputResult
}

func TestBackgroundToolsAgainstSSHD(t *testing.T) {
	srv := sshd.Start(t)
	scratch := fmt.Sprintf("%s/bgtools-%d", srv.Home, time.Now().UnixNano())
	srv.Run(t, "mkdir", "-p", scratch)
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", scratch) })
	conn := guesttest.Connect(t, srv, guest.Options{})
	session := fmt.Sprintf("bgtools-%d", time.Now().UnixNano())
	bg, err := tools.NewBackground(conn, session, smallBackground)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bg.End(10 * time.Second) })
	cs := serve(t, tools.New(conn, tools.Static{WS: workspace.Identity(scratch)}, tools.DefaultLimits, nil).WithBackground(bg), nil)

	var list tools.ListBackgroundProcessesResult
	if e := callJSON(t, cs, "list_background_processes", nil, &list); e != "" || len(list.Processes) != 0 {
		t.Fatalf("list before any: %+v %q", list, e)
	}
	start := func(cmd ...string) tools.RunShellCommandResult {
		t.Helper()
		var r tools.RunShellCommandResult
		if e := callJSON(t, cs, "run_shell_command", map[string]any{"command": cmd, "directory": scratch, "background": true}, &r); e != "" {
			t.Fatalf("start %q: %s", cmd, e)
		}
		if r.BackgroundID == nil || r.PID == nil || *r.PID < 2 || !strings.Contains(r.Note, "read_background_output") {
			t.Fatalf("start %q: %+v", cmd, r)
		}
		return r
	}
	// Output read incrementally, without offsets (each read continues the last), to the end.
	r := start("sh", "-c", `echo one; sleep 0.5; echo two >&2; sleep 0.5; pwd; exit 4`)
	id := *r.BackgroundID
	var got strings.Builder
	var last bgOutput
	reads := 0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		last = bgOutput{}
		if e := callJSON(t, cs, "read_background_output", map[string]any{"id": id}, &last); e != "" {
			t.Fatal(e)
		}
		reads++
		got.WriteString(last.Output)
		if !last.Running && !last.More {
			break
		}
	}
	if got.String() != "one\ntwo\n"+scratch+"\n" || last.ExitCode == nil || *last.ExitCode != 4 || reads < 3 {
		t.Errorf("after %d reads: %q, %+v", reads, got.String(), last.BackgroundStatus)
	}
	// From an offset, capped.
	var part bgOutput
	if e := callJSON(t, cs, "read_background_output", map[string]any{"id": id, "offset": 4, "max_bytes": 3}, &part); e != "" || part.Output != "two" || part.NextOffset != 7 || !part.More {
		t.Errorf("offset 4, 3 bytes: %+v %q", part, e)
	}

	// Endless output stays bounded in the guest; a read in the dropped middle says so.
	y := start("yes", "limactl-mcp")
	yid := *y.BackgroundID
	var yr bgOutput
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if callJSON(t, cs, "read_background_output", map[string]any{"id": yid, "offset": 0, "max_bytes": 12}, &yr); yr.OutputBytes > 4<<20 {
			break
		}
	}
	dir := fmt.Sprintf("%s/.cache/limactl-mcp/bg/%s", srv.Home, session)
	du := strings.Fields(srv.Run(t, "sh", "-c", "cat "+dir+"/*/"+strconv.Itoa(yid)+"/out.* | wc -c"))
	onDisk, _ := strconv.Atoi(du[0])
	if yr.OutputBytes <= 4<<20 || yr.Output != "limactl-mcp\n" || onDisk > 5*4096 {
		t.Errorf("yes: %d bytes written, %d on disk, read %q", yr.OutputBytes, onDisk, yr.Output)
	}
	t.Logf("yes: %d bytes written, %d kept on disk", yr.OutputBytes, onDisk)
	var mid bgOutput
	callJSON(t, cs, "read_background_output", map[string]any{"id": yid, "offset": 10000, "max_bytes": 100}, &mid)
	if mid.SkippedBytes == 0 || mid.Offset != 10000+mid.SkippedBytes || len(mid.Output) != 100 {
		t.Errorf("a read in the dropped middle: offset %d, skipped %d, %d bytes", mid.Offset, mid.SkippedBytes, len(mid.Output))
	}

	// The cap on running processes, then kill, then errors that say what to do.
	start("sleep", "600")
	start("sleep", "600") // with yes, 3 running
	if e := callJSON(t, cs, "run_shell_command", map[string]any{"command": []string{"sleep", "600"}, "directory": scratch, "background": true}, nil); !strings.Contains(e, "too many background processes") || !strings.Contains(e, "kill_background_process") {
		t.Errorf("a fourth running: %q", e)
	}
	var k tools.KillBackgroundProcessResult
	if e := callJSON(t, cs, "kill_background_process", map[string]any{"id": yid}, &k); e != "" || k.Running || k.Signal != "SIGTERM" || k.SignalSent != "SIGTERM" {
		t.Errorf("kill yes: %+v %q", k, e)
	}
	if e := callJSON(t, cs, "kill_background_process", map[string]any{"id": yid}, nil); !strings.Contains(e, "already ended") {
		t.Errorf("a second kill: %q", e)
	}
	if e := callJSON(t, cs, "read_background_output", map[string]any{"id": 99}, nil); !strings.Contains(e, "no background process with id 99") || !strings.Contains(e, "list_background_processes") {
		t.Errorf("unknown id: %q", e)
	}
	if e := callJSON(t, cs, "kill_background_process", map[string]any{"id": id, "signal": "SEGV"}, nil); !strings.Contains(e, "not one of") {
		t.Errorf("a signal not allowed: %q", e)
	}
	if e := callJSON(t, cs, "run_shell_command", map[string]any{"command": []string{"true"}, "directory": scratch + "/missing", "background": true}, nil); !strings.Contains(e, "does not exist") {
		t.Errorf("missing directory: %q", e)
	}
	if e := callJSON(t, cs, "list_background_processes", nil, &list); e != "" || len(list.Processes) != 4 {
		t.Errorf("list: %+v %q", list, e)
	}
	for _, p := range list.Processes {
		if p.Command == "" || p.Directory != scratch || p.Started == "" || (p.ID == id && (p.Running || *p.ExitCode != 4)) {
			t.Errorf("listed: %+v", p)
		}
	}
	// The server's end kills what still runs (sleep 600), within its bound.
	sleeper := list.Processes[3].PID
	t0 := time.Now()
	if err := bg.End(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("End took %s", time.Since(t0).Round(time.Millisecond))
	if out := srv.Run(t, "sh", "-c", "kill -0 -"+strconv.Itoa(sleeper)+" 2>/dev/null && echo alive || echo gone; ls "+dir+" | wc -l"); out != "gone\n0\n" {
		t.Errorf("after End: %q", out)
	}
}
