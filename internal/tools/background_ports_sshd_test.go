package tools_test

import (
	"fmt"
	"io"
	"net"
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
	// A refused connection, not one accepted and then closed: the host port itself is gone.
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 30*time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after the end", url)
	}
	_ = bg.End(10 * time.Second)
	if m, _ := filepath.Glob(filepath.Join(recDir, "*.json")); len(m) != 0 {
		t.Fatalf("the record outlived the server: %v", m)
	}
}

// A server that exits by itself (after one request) loses its URL without any further call:
// the watcher sees it gone and closes the forward.
func TestBackgroundPreviewGoneWhenTheProcessExits(t *testing.T) {
	srv := sshd.Start(t)
	scratch := fmt.Sprintf("%s/bgports-exit-%d", srv.Home, time.Now().UnixNano())
	srv.Run(t, "mkdir", "-p", scratch)
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", scratch) })
	conn := guesttest.Connect(t, srv, guest.Options{})
	session := fmt.Sprintf("bgports-exit-%d", time.Now().UnixNano())
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

	const once = `import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
c, _ = s.accept()
c.recv(4096)
c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nonce")
c.close()
`
	var r tools.RunShellCommandResult
	if e := callJSON(t, cs, "run_shell_command", map[string]any{"command": []string{"python3", "-c", once}, "directory": scratch, "background": true}, &r); e != "" || r.BackgroundID == nil {
		t.Fatalf("start: %+v %q", r, e)
	}
	ports := r.Ports
	for deadline := time.Now().Add(2 * time.Minute); len(ports) == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var out bgOutput
		if e := callJSON(t, cs, "read_background_output", map[string]any{"id": *r.BackgroundID}, &out); e != "" {
			t.Fatal(e)
		}
		ports = out.Ports
	}
	if len(ports) != 1 || ports[0].HostURL == "" {
		t.Fatalf("ports: %+v", ports)
	}
	if body, err := getBody(ports[0].HostURL); err != nil || body != "once" {
		t.Fatalf("GET %s: %q %v", ports[0].HostURL, body, err)
	}
	// No call from now on: the record empties, the host port closes.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		recs, _ := preview.ReadRecords(recDir)
		if len(recs) == 1 && len(recs[0].Ports) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the forward outlived its process: %+v", recs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(ports[0].HostURL, "http://"), 30*time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after the process exited", ports[0].HostURL)
	}
}

func getBody(url string) (string, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b), err
}
