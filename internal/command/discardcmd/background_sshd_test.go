package discardcmd_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// Discard ends the background processes every server of the session left running (here, one
// whose server is gone) and says so.
func TestDiscardEndsBackgroundProcesses(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	conn := guesttest.Connect(t, f.Srv, guest.Options{})
	output := runnerproto.BgOutput{SegmentBytes: 4096, HeadSegments: 1, TailSegments: 1}
	var pids []int
	for _, owner := range []string{"111-aa", "222-bb"} {
		st, err := conn.BgStart(context.Background(), runnerproto.BgStartRequest{Group: staging.SessionID(f.Workdir) + "/" + owner, Argv: []string{"sleep", "600"}, Dir: "/", Output: output, MaxRunning: 1, MaxKept: 1})
		if err != nil || st.PID < 2 {
			t.Fatalf("BgStart = %+v, %v", st, err)
		}
		pids = append(pids, st.PID)
	}
	conn.Close()
	r := run(f, true, "")
	if r.err != nil || !strings.HasSuffix(r.out, ", and stopped 2 background processes.\n") {
		t.Errorf("discard: error %v, stdout %q, stderr %q", r.err, r.out, r.errOut)
	}
	for _, pid := range pids {
		if out := strings.TrimSpace(f.Srv.Run(t, "sh", "-c", "kill -0 -"+strconv.Itoa(pid)+" 2>/dev/null && echo alive || echo gone")); out != "gone" {
			t.Errorf("process group %d after discard: %s", pid, out)
		}
	}
}
