package guest_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

var testBgOutput = runnerproto.BgOutput{SegmentBytes: 4096, HeadSegments: 2, TailSegments: 3}

// A background process is started through the ControlMaster's runner; the connection then
// moves to one of its own (serve's handoff) and the master goes away with its runner (what
// retiring it does, sooner); the process runs on and the new runner reads and lists it. Then
// the connection is closed and a new one made (a reconnect after a drop): the same, and the
// kill works from there.
func TestBackgroundSurvivesHandoffAndReconnect(t *testing.T) {
	srv := sshd.Start(t)
	sock := startMaster(t, srv)
	ctx := context.Background()
	group := fmt.Sprintf("handoff-%d/owner", time.Now().UnixNano())
	c := guest.New(masterTarget(srv, sock), guest.Options{Handoff: true})
	defer c.Close()
	if via, err := c.Via(ctx); err != nil || via != sshlink.ViaControlMaster {
		t.Fatalf("Via = %q, %v; want %q first", via, err, sshlink.ViaControlMaster)
	}
	st, err := c.BgStart(ctx, runnerproto.BgStartRequest{Group: group, Argv: []string{"sh", "-c", `i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done`}, Dir: "/", Output: testBgOutput, MaxRunning: 2, MaxKept: 4})
	if err != nil || st.ID != 1 {
		t.Fatalf("BgStart = %+v, %v", st, err)
	}
	t.Cleanup(func() {
		c2 := guesttest.Connect(t, srv, guest.Options{})
		_, _ = c2.BgEnd(context.Background(), runnerproto.BgEndRequest{Group: group})
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if via, _ := c.Via(ctx); via == sshlink.ViaSSH {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no handoff to a connection of its own")
		}
	}
	// The master's sessions end now, its runner with them.
	if out, err := exec.Command("ssh", "-F", "/dev/null", "-o", "ControlPath="+sock, "-O", "exit", "x").CombinedOutput(); err != nil {
		t.Fatalf("ending the master: %v %s", err, out)
	}
	time.Sleep(500 * time.Millisecond)
	read := func(c *guest.Conn) *runnerproto.BgReadResult {
		t.Helper()
		r, err := c.BgRead(ctx, runnerproto.BgReadRequest{Group: group, ID: st.ID, Max: 1 << 20, Output: testBgOutput})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := read(c)
	if !r.Status.Running || r.Status.PID != st.PID || len(r.Data) < len("tick 0\ntick 1\n") {
		t.Fatalf("after the handoff: running %v, pid %d, output %q", r.Status.Running, r.Status.PID, r.Data)
	}
	first := r.Status.OutputBytes
	c.Close()

	c2 := guesttest.Connect(t, srv, guest.Options{})
	time.Sleep(500 * time.Millisecond)
	r = read(c2)
	if !r.Status.Running || r.Status.OutputBytes <= first {
		t.Fatalf("after a reconnect: running %v, %d bytes (had %d)", r.Status.Running, r.Status.OutputBytes, first)
	}
	l, err := c2.BgList(ctx, runnerproto.BgListRequest{Group: group, Max: 4, Output: testBgOutput})
	if err != nil || len(l.Processes) != 1 || l.Processes[0].ID != st.ID {
		t.Fatalf("BgList = %+v, %v", l, err)
	}
	k, err := c2.BgSignal(ctx, runnerproto.BgSignalRequest{Group: group, ID: st.ID, Signal: "SIGTERM", GraceMillis: 2000, Output: testBgOutput})
	if err != nil || k.Status.Running || k.Status.Signal != "SIGTERM" {
		t.Fatalf("BgSignal = %+v, %v", k, err)
	}
	if out := srv.Run(t, "sh", "-c", "kill -0 -"+strconv.Itoa(st.PID)+" 2>/dev/null && echo alive || echo gone"); out != "gone\n" {
		t.Errorf("the process group after the kill: %s", out)
	}
}
