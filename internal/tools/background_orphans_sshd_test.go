package tools_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// A server that died without ending its background processes (SIGKILL) leaves them to the
// next server of the session: its first background start ends those whose server's host
// process is gone, and spares those of a server still running.
func TestBackgroundOrphansOfDeadServers(t *testing.T) {
	srv := sshd.Start(t)
	conn := guesttest.Connect(t, srv, guest.Options{})
	session := fmt.Sprintf("orphans-%d", time.Now().UnixNano())
	t.Cleanup(func() { _, _ = conn.BgEnd(context.Background(), runnerproto.BgEndRequest{Group: session}) })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	alive := exec.Command("sleep", "600")
	if err := alive.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alive.Process.Kill(); _ = alive.Wait() })
	start := func(owner string) int {
		st, err := conn.BgStart(context.Background(), runnerproto.BgStartRequest{Group: session + "/" + owner, Argv: []string{"sleep", "600"}, Dir: "/",
			Output: runnerproto.BgOutput{SegmentBytes: 4096, HeadSegments: 1, TailSegments: 1}, MaxRunning: 2, MaxKept: 2})
		if err != nil || st.PID < 2 {
			t.Fatalf("BgStart for %s: %+v, %v", owner, st, err)
		}
		return st.PID
	}
	orphan := start(strconv.Itoa(dead.Process.Pid) + "-aaaa")
	kept := start(strconv.Itoa(alive.Process.Pid) + "-bbbb")

	bg, err := tools.NewBackground(conn, session, smallBackground)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bg.End(10 * time.Second) })
	cs := serve(t, tools.New(conn, tools.Static{WS: workspace.Identity("/")}, tools.DefaultLimits, nil).WithBackground(bg), nil)
	var r tools.RunShellCommandResult
	if e := callJSON(t, cs, "run_shell_command", map[string]any{"command": []string{"true"}, "directory": "/", "background": true}, &r); e != "" {
		t.Fatal(e)
	}
	state := func(pid int) string {
		return strings.TrimSpace(srv.Run(t, "sh", "-c", "kill -0 -"+strconv.Itoa(pid)+" 2>/dev/null && echo alive || echo gone"))
	}
	if got := state(orphan); got != "gone" {
		t.Errorf("the dead server's process: %s", got)
	}
	if got := state(kept); got != "alive" {
		t.Errorf("the running server's process: %s", got)
	}
}
