package tools_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/preview"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// A dev server started in the background is reported with its port and a host URL that
// reaches it over the session's SSH connection (here the "guest" is this machine: its port is
// taken on the host by the server itself, so the forward takes another, and says so); the
// record lists it for `limactl mcp ports`; once the process is killed, the URL is gone.
func TestBackgroundPreviewAgainstSSHD(t *testing.T) {
	srv := sshd.Start(t)
	scratch := fmt.Sprintf("%s/bgports-%d", srv.Home, time.Now().UnixNano())
	srv.Run(t, "mkdir", "-p", scratch)
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", scratch) })
	srv.Run(t, "sh", "-c", "echo preview-ok > "+scratch+"/index.txt")
	conn := guesttest.Connect(t, srv, guest.Options{})
	session := fmt.Sprintf("bgports-%d", time.Now().UnixNano())
	bg, err := tools.NewBackground(conn, session, smallBackground)
	if err != nil {
		t.Fatal(err)
	}
	recDir := t.TempDir()
	fwd, err := preview.New(preview.Options{Dial: conn.DialGuest, Record: &preview.RecordFile{Dir: recDir, Record: preview.Record{ServePID: os.Getpid(), SessionID: session, Workdir: scratch}}})
	if err != nil {
		t.Fatal(err)
	}
	bg.WithPreviews(fwd)
	t.Cleanup(func() { _ = bg.End(10 * time.Second) })
	cs := serve(t, tools.New(conn, tools.Static{WS: workspace.Identity(scratch)}, tools.DefaultLimits, nil).WithBackground(bg), nil)

	var r tools.RunShellCommandResult
	if e := callJSON(t, cs, "run_shell_command", map[string]any{"command": []string{"sh", "-c", "exec python3 -m http.server 0 --bind 127.0.0.1"}, "directory": scratch, "background": true}, &r); e != "" || r.BackgroundID == nil {
		t.Fatalf("start: %+v %q", r, e)
	}
	id := *r.BackgroundID
	// The start may have answered before the server listened (a loaded machine): read until
	// it does, within a generous bound.
	ports := r.Ports
	deadline := time.Now().Add(2 * time.Minute)
	for len(ports) == 0 && time.Now().Before(deadline) {
		var out bgOutput
		if e := callJSON(t, cs, "read_background_output", map[string]any{"id": id}, &out); e != "" {
			t.Fatal(e)
		}
		if !out.Running {
			t.Fatalf("the server ended: %+v", out)
		}
		ports = out.Ports
		time.Sleep(200 * time.Millisecond)
	}
	if len(ports) != 1 || ports[0].Port < 1 || !strings.HasPrefix(ports[0].HostURL, "http://127.0.0.1:") {
		t.Fatalf("ports: %+v", ports)
	}
	url := ports[0].HostURL
	if url == fmt.Sprintf("http://127.0.0.1:%d", ports[0].Port) {
		t.Fatalf("the host URL %s is the guest's port, which the server itself holds on this machine", url)
	}
	resp, err := http.Get(url + "/index.txt")
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if strings.TrimSpace(string(body)) != "preview-ok" {
		t.Fatalf("GET %s: %d %q", url, resp.StatusCode, body)
	}

	// The list says the same, and so does the record.
	var list tools.ListBackgroundProcessesResult
	if e := callJSON(t, cs, "list_background_processes", nil, &list); e != "" || len(list.Processes) != 1 || len(list.Processes[0].Ports) != 1 || list.Processes[0].Ports[0].HostURL != url {
		t.Fatalf("list: %+v %q", list, e)
	}
	recs, err := preview.ReadRecords(recDir)
	if err != nil || len(recs) != 1 || len(recs[0].Ports) != 1 || recs[0].Ports[0].HostURL != url || !recs[0].Ports[0].Moved {
		t.Fatalf("records: %+v %v", recs, err)
	}

	// Killed: the URL is gone at once, from the answers, the record and the host.
	var k tools.KillBackgroundProcessResult
	if e := callJSON(t, cs, "kill_background_process", map[string]any{"id": id}, &k); e != "" || len(k.Ports) != 0 {
		t.Fatalf("kill: %+v %q", k, e)
	}
	if recs, _ := preview.ReadRecords(recDir); len(recs) != 1 || len(recs[0].Ports) != 0 {
		t.Fatalf("records after the end: %+v", recs)
	}
	if c, err := http.Get(url); err == nil {
		c.Body.Close()
		t.Fatalf("%s still answers after the end", url)
	}
	_ = bg.End(10 * time.Second)
	if m, _ := filepath.Glob(filepath.Join(recDir, "*.json")); len(m) != 0 {
		t.Fatalf("the record outlived the server: %v", m)
	}
}
