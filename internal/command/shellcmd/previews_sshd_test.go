package shellcmd_test

import (
	"io"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/portscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/shellcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/preview"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// A dev server the command starts, in a session of its own (setsid, as a shell's job or
// sudo's pty makes), is forwarded to the host while the command runs: the record lists it
// for `ports` and `status`, marked as the shell's, and its URL answers from the host; once the
// command ends, the record and the forward are gone. A server of the same guest user that
// the command did not start is not forwarded.
func TestShellForwardsTheCommandsServers(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"index.html": "from-the-copy\n"})
	stop := path.Join(path.Dir(f.GuestPath), "stop")
	// Another server of the same user, not the command's.
	f.Srv.Run(t, "sh", "-c", "cd "+path.Dir(f.GuestPath)+" && (setsid python3 -m http.server 0 --bind 127.0.0.1 >/dev/null 2>&1 & echo $! > other.pid)")
	t.Cleanup(func() { f.Srv.Run(t, "sh", "-c", "kill $(cat "+path.Dir(f.GuestPath)+"/other.pid) 2>/dev/null; true") })

	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, code := run(t, f, nil, shellcmd.Options{NoReview: true, Command: []string{"sh", "-c",
			"setsid python3 -m http.server 0 --bind 127.0.0.1 >/dev/null 2>&1 & s=$!; " +
				"while [ ! -e " + stop + " ]; do sleep 0.1; done; kill $s"}})
		done <- result{stderr, code}
	}()

	var rec preview.Record
	deadline := time.Now().Add(2 * time.Minute)
	for {
		recs, err := portscmd.Records(f.Store)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 1 && len(recs[0].Ports) > 0 {
			rec = recs[0]
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the command ended first (exit %d):\n%s", r.code, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			f.Srv.Run(t, "touch", stop)
			t.Fatalf("no port recorded: %+v", recs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !rec.Shell || rec.Workdir != f.Workdir || len(rec.Ports) != 1 || rec.Ports[0].ID != 0 {
		t.Errorf("record %+v, want the shell's, of %s, with one port", rec, f.Workdir)
	}
	if line := portscmd.Line(rec.Ports[0], rec.Shell); !strings.Contains(line, "started in limactl mcp shell") {
		t.Errorf("ports says %q", line)
	}
	resp, err := http.Get(rec.Ports[0].HostURL + "/index.html")
	if err != nil {
		t.Fatalf("GET through the forward %s: %v", rec.Ports[0].HostURL, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "from-the-copy\n" {
		t.Errorf("GET %s: %d %q", rec.Ports[0].HostURL, resp.StatusCode, body)
	}

	f.Srv.Run(t, "touch", stop)
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the command did not end")
	}
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if recs, _ := portscmd.Records(f.Store); len(recs) != 0 {
		t.Errorf("records after the command: %+v", recs)
	}
	if _, err := http.Get(rec.Ports[0].HostURL); err == nil {
		t.Errorf("the forward %s still answers after the command", rec.Ports[0].HostURL)
	}
}

// A --publish that is not an IP address is refused before anything runs.
func TestShellPublishNotAnAddress(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	stdout, stderr, code := run(t, f, nil, shellcmd.Options{Publish: "localhost", Command: []string{"sh", "-c", "echo RAN"}})
	if code == 0 || strings.Contains(stdout, "RAN") || !strings.Contains(stderr, `--publish "localhost": want a host IP address`) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}
