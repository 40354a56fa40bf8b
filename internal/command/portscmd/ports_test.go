package portscmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/preview"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// The records of running servers are listed, with each port's host URL, and a record left by
// a server that is gone (killed) is not.
func TestRecordsOfRunningServers(t *testing.T) {
	store := staging.Store{Dir: t.TempDir()}
	dir := filepath.Join(store.Dir, "ports")
	live := &preview.RecordFile{Dir: dir, Record: preview.Record{ServePID: os.Getpid(), SessionID: "abc", Session: "ui", Workdir: "/p"}}
	if err := live.Save([]preview.Port{{ID: 1, GuestPort: 8000, GuestAddr: "::", HostPort: 41234, HostURL: "http://127.0.0.1:41234", Moved: true}}); err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := &preview.RecordFile{Dir: dir, Record: preview.Record{ServePID: gone.Process.Pid, SessionID: "def", Workdir: "/q"}}
	if err := stale.Save([]preview.Port{{ID: 2, GuestPort: 5173, HostPort: 5173, HostURL: "http://127.0.0.1:5173"}}); err != nil {
		t.Fatal(err)
	}
	recs, err := Records(store)
	if err != nil || len(recs) != 1 || recs[0].Workdir != "/p" {
		t.Fatalf("records: %+v %v", recs, err)
	}
	var b strings.Builder
	printPorts(&b, JSON{Instance: "agent", Sessions: []SessionJSON{{Workdir: "/p", Session: "ui", Ports: recs[0].Ports}}})
	want := "/p  [session ui]\n  8000 → http://127.0.0.1:41234  (background process 1; host port 8000 was taken)\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	printPorts(&b, JSON{Instance: "agent"})
	if !strings.Contains(b.String(), "No ports forwarded") {
		t.Fatalf("none: %q", b.String())
	}
}
