package runner

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// A background process's listening sockets, and those of the children it starts (a server
// behind `sh -c`), are in its status once it listens, and gone once it ended.
func TestBackgroundPortsOfTheGroup(t *testing.T) {
	forEachBgRunner(t, func(t *testing.T, start func() *testRunner, home string) {
		r := start()
		// The server is sh's child (not exec'd): the group's, not the command's own socket.
		st := bgStart(t, r, "s/o", "sh", "-c", "python3 -u -m http.server 0 --bind 127.0.0.1 & wait")
		if st.ID == 0 {
			t.Fatalf("not started: %+v", st)
		}
		served := regexp.MustCompile(`port (\d+)`)
		var port int
		var got []runnerproto.BgPort
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			res := bgRead(t, r, "s/o", st.ID, 0, 4096)
			if m := served.FindSubmatch(res.Data); m != nil {
				port, _ = strconv.Atoi(string(m[1]))
			}
			if !res.Status.Running {
				t.Fatalf("the server ended: %+v %q", res.Status, res.Data)
			}
			if got = res.Status.Ports; port != 0 && len(got) > 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if port == 0 || len(got) != 1 || got[0].Port != port || got[0].Addr != "127.0.0.1" {
			t.Fatalf("ports %+v, the server said port %d", got, port)
		}
		// The list says the same.
		resp := r.call(t, &runnerproto.Request{BgList: &runnerproto.BgListRequest{Group: "s/o", Max: 5, Output: testBgOutput}})
		if resp.BgList == nil || len(resp.BgList.Processes) != 1 || len(resp.BgList.Processes[0].Ports) != 1 || resp.BgList.Processes[0].Ports[0].Port != port {
			t.Fatalf("list: %+v %q", resp.BgList, resp.Error)
		}
		bgSignal(t, r, "s/o", st.ID, "SIGTERM", 5*time.Second)
		if res := bgRead(t, r, "s/o", st.ID, 0, 4096); res.Status.Running || len(res.Status.Ports) != 0 {
			t.Fatalf("after the end: %+v", res.Status)
		}
	})
}
