//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// bgCall calls a tool and decodes its structured result; an error result fails the test.
func bgCall(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, text := callTool(t, s, name, args)
	if res.IsError {
		t.Fatalf("%s(%v): error result: %s", name, args, text)
	}
	if out != nil {
		mustT(t, json.Unmarshal([]byte(text), out))
	}
}

// bgError calls a tool that must answer with an error result, and returns its text.
func bgError(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, text := callTool(t, s, name, args)
	if !res.IsError {
		t.Fatalf("%s(%v): not an error: %s", name, args, text)
	}
	return text
}

type bgStarted struct {
	BackgroundID int    `json:"background_id"`
	PID          int    `json:"pid"`
	Note         string `json:"note"`
}

type bgRead struct {
	Output       string `json:"output"`
	Offset       int64  `json:"offset"`
	NextOffset   int64  `json:"next_offset"`
	SkippedBytes int64  `json:"skipped_bytes"`
	Running      bool   `json:"running"`
	ExitCode     *int   `json:"exit_code"`
	Signal       string `json:"signal"`
	OutputBytes  int64  `json:"output_bytes"`
}

func bgStart(t *testing.T, s *mcp.ClientSession, dir string, command ...string) bgStarted {
	t.Helper()
	var st bgStarted
	bgCall(t, s, "run_shell_command", map[string]any{"command": command, "directory": dir, "background": true}, &st)
	if st.BackgroundID < 1 || st.PID < 2 {
		t.Fatalf("background %q: %+v", command, st)
	}
	return st
}

// guestGroupAlive says whether process group pid has a member in the guest.
func guestGroupAlive(t *testing.T, pid int) bool {
	return strings.TrimSpace(guestShell(t, "kill -0 -"+strconv.Itoa(pid)+" 2>/dev/null && echo alive || echo gone")) == "alive"
}

// fetchScript fetches a path from the web server on port 8765 in the guest with python3's
// socket module (python3-minimal has no http client), retrying while the server starts, and
// prints the body.
func fetchScript(path string) string {
	return `import socket, sys, time
for i in range(150):
    try:
        c = socket.create_connection(("127.0.0.1", 8765), timeout=5)
        break
    except OSError:
        time.sleep(0.2)
else:
    sys.exit("no answer on port 8765")
c.sendall(b"GET ` + path + ` HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
data = b""
while True:
    b = c.recv(65536)
    if not b:
        break
    data += b
print(data.split(b"\r\n\r\n", 1)[1].decode(), end="")`
}

// miniHTTPServer is a web server in python3's socket module, for a guest whose python3 is
// python3-minimal (no http.server): it logs requests the way http.server does.
const miniHTTPServer = `import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8765))
s.listen(16)
print("Serving HTTP on 127.0.0.1 port 8765 (http://127.0.0.1:8765/) ...", flush=True)
while True:
    c, _ = s.accept()
    line = c.recv(65536).decode(errors="replace").split("\r\n")[0]
    try:
        body, code = open("." + line.split(" ")[1], "rb").read(), 200
    except OSError:
        body, code = b"not found", 404
    c.sendall(b"HTTP/1.0 %d X\r\nContent-Length: %d\r\n\r\n" % (code, len(body)) + body)
    c.close()
    print('127.0.0.1 - - "%s" %d -' % (line, code), file=sys.stderr, flush=True)
`

// A day with background processes, on the real VM: a web server started by one call and
// reached by the next, its log read incrementally, through serve's handoff from the
// ControlMaster to a connection of its own (the master's runner retired); endless output that
// stays bounded in the guest; kill; serve's exit ends what runs; a serve killed outright leaves
// its processes to discard.
func TestBackgroundProcesses(t *testing.T) {
	dir := project(t, map[string]string{"hello.txt": "hello from the staged copy\n"})
	discardOnCleanup(t, dir)
	session := staging.SessionID(dir)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", "--debug", instanceName)
	if out := shellOK(t, s.Session, dir, "command -v python3 || echo none"); strings.TrimSpace(out) == "none" {
		t.Skip("the VM image has no python3 (hack/e2e/build-image.sh installs python3-minimal)")
	}

	// One call starts the server; the next reaches it.
	webCommand := []string{"python3", "-u", "-m", "http.server", "8765", "--bind", "127.0.0.1"}
	if out := shellOK(t, s.Session, dir, "python3 -c 'import http.server' 2>/dev/null && echo full || echo minimal"); strings.TrimSpace(out) == "minimal" {
		t.Log("the guest's python3 has no http.server (python3-minimal): a web server of python3's socket module stands in")
		webCommand = []string{"python3", "-u", "-c", miniHTTPServer}
	}
	t.Logf("web server: %s", strings.Join(webCommand[:4], " "))
	web := bgStart(t, s.Session, dir, webCommand...)
	t0 := time.Now()
	if got := shellOK(t, s.Session, dir, "python3 -c "+shq(fetchScript("/hello.txt"))); got != "hello from the staged copy\n" {
		t.Fatalf("fetched %q", got)
	}
	t.Logf("the background web server answered the next call %s after it", time.Since(t0).Round(time.Millisecond))

	// Its log, read incrementally: each read continues the last.
	readUntil := func(id int, want string) bgRead {
		t.Helper()
		var r bgRead
		var seen strings.Builder
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			bgCall(t, s.Session, "read_background_output", map[string]any{"id": id}, &r)
			seen.WriteString(r.Output)
			if strings.Contains(seen.String(), want) {
				r.Output = seen.String()
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("background %d: no %q in %q", id, want, seen.String())
			}
		}
	}
	first := readUntil(web.BackgroundID, `"GET /hello.txt HTTP/1.1" 200`)
	if !strings.Contains(first.Output, "Serving HTTP on 127.0.0.1 port 8765") || !first.Running {
		t.Errorf("first read: %+v", first)
	}
	shellOK(t, s.Session, dir, "python3 -c "+shq(fetchScript("/second")))
	second := readUntil(web.BackgroundID, `"GET /second HTTP/1.1" 404`)
	if strings.Contains(second.Output, "hello.txt") || second.Offset != first.NextOffset {
		t.Errorf("the second read repeats the first: %+v (first ended at %d)", second, first.NextOffset)
	}

	// Endless output stays bounded on the guest's disk (the first 256 KiB, the last 1 MiB).
	yes := bgStart(t, s.Session, dir, "yes", "limactl-mcp background")
	time.Sleep(3 * time.Second)
	var y bgRead
	bgCall(t, s.Session, "read_background_output", map[string]any{"id": yes.BackgroundID, "offset": 0, "max_bytes": 24}, &y)
	// While it writes, segments come and go faster than a listing: a bound, not a figure.
	onDisk, _ := strconv.Atoi(strings.TrimSpace(guestShell(t, fmt.Sprintf("cat ~/.cache/limactl-mcp/bg/%s/*/%d/out.* 2>/dev/null | wc -c", session, yes.BackgroundID))))
	rss := strings.TrimSpace(guestShell(t, "ps -o rss= -o args= -u \"$(id -u)\" | grep '[b]g-supervise' | awk '{s+=$1; n++} END {print n, s}'"))
	t.Logf("yes in the background: %d bytes written in ~3 s, %d kept on the guest's disk; supervisors (count, total RSS KiB): %s", y.OutputBytes, onDisk, rss)
	if y.Output != "limactl-mcp background\nl" || y.OutputBytes < 4<<20 || onDisk > (256<<10)+(1<<20) {
		t.Errorf("yes: read %q, %d bytes written, %d on disk", y.Output, y.OutputBytes, onDisk)
	}
	var killed struct {
		SignalSent string `json:"signal_sent"`
		Running    bool   `json:"running"`
		Signal     string `json:"signal"`
	}
	bgCall(t, s.Session, "kill_background_process", map[string]any{"id": yes.BackgroundID}, &killed)
	if killed.Running || killed.Signal != "SIGTERM" || guestGroupAlive(t, yes.PID) {
		t.Errorf("kill yes: %+v", killed)
	}
	if e := bgError(t, s.Session, "kill_background_process", map[string]any{"id": yes.BackgroundID}); !strings.Contains(e, "already ended") {
		t.Errorf("a second kill: %s", e)
	}
	// Once it ended, what the guest keeps of its output, exactly.
	kept := strings.Fields(guestShell(t, fmt.Sprintf("cd ~/.cache/limactl-mcp/bg/%s/*/%d && ls out.* | wc -l && cat out.* | wc -c", session, yes.BackgroundID)))
	var final bgRead
	bgCall(t, s.Session, "read_background_output", map[string]any{"id": yes.BackgroundID, "offset": 0, "max_bytes": 1}, &final)
	t.Logf("yes after the kill: %d bytes written, %s segments holding %s bytes on the guest's disk", final.OutputBytes, kept[0], kept[1])
	if n, _ := strconv.Atoi(kept[1]); n > (256<<10)+(1<<20) || n < 256<<10 {
		t.Errorf("yes after the kill: %s bytes kept", kept[1])
	}

	// The handoff: serve moved to a connection of its own and retired the master's runner;
	// the web server is still there, still reachable, still listed.
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(s.Stderr.String(), "the ControlMaster's sessions retired"); time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("no handoff and retirement within 3 minutes:\n%s", s.Stderr.String())
		}
	}
	for _, line := range strings.Split(s.Stderr.String(), "\n") {
		if strings.Contains(line, "handoff=true") || strings.Contains(line, "sessions retired") {
			t.Logf("serve: %s", line)
		}
	}
	var list struct {
		Processes []struct {
			ID      int    `json:"id"`
			Command string `json:"command"`
			Running bool   `json:"running"`
			PID     int    `json:"pid"`
		} `json:"processes"`
	}
	bgCall(t, s.Session, "list_background_processes", map[string]any{}, &list)
	if len(list.Processes) != 2 || !list.Processes[0].Running || list.Processes[0].PID != web.PID || !strings.HasPrefix(list.Processes[0].Command, "python3 -u ") {
		t.Fatalf("after the handoff: %+v", list)
	}
	shellOK(t, s.Session, dir, "python3 -c "+shq(fetchScript("/after-handoff")))
	readUntil(web.BackgroundID, `"GET /after-handoff HTTP/1.1" 404`)

	// A sleeper too; then serve exits (its client closes stdin): both end with it, promptly.
	sleeper := bgStart(t, s.Session, dir, "sleep", "1000")
	t0 = time.Now()
	mustT(t, s.Session.Close())
	t.Logf("serve exited %s after its client closed, ending 2 background processes", time.Since(t0).Round(time.Millisecond))
	for deadline := time.Now().Add(30 * time.Second); guestGroupAlive(t, web.PID) || guestGroupAlive(t, sleeper.PID); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("background processes still run 30 s after serve exited")
		}
	}

	// A serve killed outright (SIGKILL) cannot end its processes: discard does.
	s2 := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	orphan := bgStart(t, s2.Session, dir, "sh", "-c", "sleep 1000; echo never")
	pid := s2.PID
	if vm.User != "" {
		pid = childPID(t, pid)
	}
	mustT(t, syscall.Kill(pid, syscall.SIGKILL))
	time.Sleep(time.Second)
	if !guestGroupAlive(t, orphan.PID) {
		t.Fatal("the background process of a killed serve is gone before discard (it should run until discard)")
	}
	out, stderr, code := plugin(t, dir, "discard", instanceName, "--yes")
	if code != 0 || !strings.Contains(out, "stopped 1 background process") {
		t.Errorf("discard: %d %q %q", code, out, stderr)
	}
	if guestGroupAlive(t, orphan.PID) {
		t.Error("the background process runs on after discard")
	}
	if left := strings.TrimSpace(guestShell(t, "ls -A ~/.cache/limactl-mcp/bg/"+session+" 2>/dev/null | wc -l")); left != "0" {
		t.Errorf("records left after discard: %s", left)
	}
}
