//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// previewServer is a web server in python3's socket module (the guest's python3 is
// python3-minimal: no http.server) on ADDR:PORT answering every request with BODY.
const previewServer = `import socket, sys
addr, port, body = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
s = socket.socket()
s.bind((addr, port))
s.listen(16)
print("Serving HTTP on %s port %d" % (addr, port), flush=True)
while True:
    c, _ = s.accept()
    c.recv(65536)
    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    c.close()
`

type previewPort struct {
	Port    int    `json:"port"`
	HostURL string `json:"host_url"`
}

// waitPreview reads process id's status until it listens with a host URL (within a generous
// bound: a loaded machine, an emulated guest).
func waitPreview(t *testing.T, s *mcp.ClientSession, id int) previewPort {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var r struct {
			bgRead
			Ports []previewPort `json:"ports"`
		}
		bgCall(t, s, "read_background_output", map[string]any{"id": id, "offset": 0}, &r)
		if !r.Running {
			t.Fatalf("the server ended: %+v", r)
		}
		if len(r.Ports) > 0 && r.Ports[0].HostURL != "" {
			return r.Ports[0]
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("background process %d never listened with a host URL", id)
	return previewPort{}
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

// Two sessions of one project each serve on guest port 8000 (one on 127.0.0.1, one on
// 127.0.0.2: one guest, one port space), the second under --network=none; each is reached
// from the host through the URL its tools return, which differ; `limactl mcp ports` lists
// both; a killed server's URL is gone.
func TestPreviews(t *testing.T) {
	dir := homeWorkdir(t)
	sa := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--session", "pa")
	sb := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--session", "pb", "--network=none")
	for _, name := range []string{"pa", "pb"} {
		t.Cleanup(func() {
			if _, stderr, code := plugin(t, dir, "discard", "--session", name, instanceName, "--yes"); code != 0 {
				t.Logf("discard %s: %s", name, stderr)
			}
		})
	}
	ida := bgStart(t, sa.Session, dir, "python3", "-c", previewServer, "127.0.0.1", "8000", "from-a").BackgroundID
	idb := bgStart(t, sb.Session, dir, "python3", "-c", previewServer, "127.0.0.2", "8000", "from-b").BackgroundID
	pa, pb := waitPreview(t, sa.Session, ida), waitPreview(t, sb.Session, idb)
	t.Logf("session pa: %+v; session pb (--network=none): %+v", pa, pb)
	if pa.Port != 8000 || pb.Port != 8000 || pa.HostURL == pb.HostURL {
		t.Fatalf("ports: %+v and %+v", pa, pb)
	}
	for url, want := range map[string]string{pa.HostURL: "from-a", pb.HostURL: "from-b"} {
		if got, err := getBody(url); err != nil || got != want {
			t.Errorf("GET %s: %q %v, want %q", url, got, err, want)
		}
	}
	// What Lima's own forwarding does with the guest's 127.0.0.1:8000 (logged, for the docs).
	if pa.HostURL != "http://127.0.0.1:8000" {
		got, err := getBody("http://127.0.0.1:8000/")
		t.Logf("host 127.0.0.1:8000 (not ours): %q %v", got, err)
	}

	out, stderr, code := plugin(t, dir, "ports", instanceName, "--json")
	if code != 0 {
		t.Fatalf("ports: exit %d: %s", code, stderr)
	}
	var pj struct {
		Sessions []struct {
			Session string `json:"session"`
			Ports   []struct {
				GuestPort int    `json:"guest_port"`
				HostURL   string `json:"host_url"`
			} `json:"ports"`
		} `json:"sessions"`
	}
	mustT(t, json.Unmarshal([]byte(out), &pj))
	urls := map[string]string{}
	for _, s := range pj.Sessions {
		for _, p := range s.Ports {
			urls[s.Session] = p.HostURL
		}
	}
	if urls["pa"] != pa.HostURL || urls["pb"] != pb.HostURL {
		t.Fatalf("ports --json: %s", out)
	}
	if text, _, _ := plugin(t, dir, "status", instanceName); !strings.Contains(text, "8000 → "+pb.HostURL) {
		t.Errorf("status has no port line for session pb:\n%s", text)
	}

	// Killed: the URL is gone.
	var k struct {
		Ports []previewPort `json:"ports"`
	}
	bgCall(t, sa.Session, "kill_background_process", map[string]any{"id": ida}, &k)
	if len(k.Ports) != 0 {
		t.Fatalf("kill: %+v", k)
	}
	// A refused connection: the host port itself is gone, not only the server behind it.
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(pa.HostURL, "http://"), 30*time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after its server was killed", pa.HostURL)
	}
	if got, err := getBody(pb.HostURL); err != nil || got != "from-b" {
		t.Errorf("GET %s after the other's end: %q %v", pb.HostURL, got, err)
	}

	t.Run("a server started in limactl mcp shell", func(t *testing.T) { shellPreview(t, dir) })
}

// A server that a command of `limactl mcp shell` starts (an agent in the VM would), under
// --network=none (it runs as the agent user) and on guest port 8000 too (127.0.0.3), is
// forwarded to the host while the command runs: `ports` lists it as the shell's, its URL
// answers; once the command ends, it is gone.
func shellPreview(t *testing.T, dir string) {
	t.Cleanup(func() {
		if _, stderr, code := plugin(t, dir, "discard", "--session", "pc", instanceName, "--yes"); code != 0 {
			t.Logf("discard pc: %s", stderr)
		}
	})
	stop := fmt.Sprintf("/tmp/lmcp-preview-stop-%d", time.Now().UnixNano())
	// The command ends when the test creates stop (or after 5 minutes).
	script := `python3 -c "$1" 127.0.0.3 8000 from-c & s=$!; i=0; while [ ! -e "$2" ] && [ $i -lt 1500 ]; do sleep 0.2; i=$((i+1)); done; kill $s`
	cmd := vm.Command(ctxT(t, 10*time.Minute), "limactl-mcp", "shell", "--no-review", "--session", "pc", "--network=none", instanceName, "--", "sh", "-c", script, "sh", previewServer, stop)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	mustT(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ended := false
	end := func() {
		if ended {
			return
		}
		ended = true
		if out, err := vm.Command(ctxT(t, 2*time.Minute), "limactl", "shell", "--workdir", "/", instanceName, "touch", stop).CombinedOutput(); err != nil {
			t.Errorf("touch %s: %v %s", stop, err, out)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("shell: %v\n%s", err, stderr.String())
			}
		case <-time.After(5 * time.Minute):
			t.Errorf("the shell's command did not end\n%s", stderr.String())
		}
	}
	t.Cleanup(end)

	type shellPorts struct {
		Sessions []struct {
			Session string `json:"session"`
			Shell   bool   `json:"shell"`
			Ports   []struct {
				ID        int    `json:"id"`
				GuestPort int    `json:"guest_port"`
				GuestAddr string `json:"guest_addr"`
				HostURL   string `json:"host_url"`
			} `json:"ports"`
		} `json:"sessions"`
	}
	url := ""
	deadline := time.Now().Add(5 * time.Minute)
	for url == "" {
		out, errOut, code := plugin(t, dir, "ports", instanceName, "--session", "pc", "--json")
		if code != 0 {
			t.Fatalf("ports: exit %d: %s", code, errOut)
		}
		var pj shellPorts
		mustT(t, json.Unmarshal([]byte(out), &pj))
		for _, s := range pj.Sessions {
			for _, p := range s.Ports {
				if s.Shell && p.GuestPort == 8000 && p.GuestAddr == "127.0.0.3" {
					url = p.HostURL
				}
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the shell's command ended first: %v\n%s", err, stderr.String())
		default:
		}
		if url == "" {
			if time.Now().After(deadline) {
				t.Fatalf("the shell's server never listed: %s\n%s", out, stderr.String())
			}
			time.Sleep(time.Second)
		}
	}
	t.Logf("session pc (limactl mcp shell, --network=none): %s", url)
	if got, err := getBody(url); err != nil || got != "from-c" {
		t.Errorf("GET %s: %q %v", url, got, err)
	}
	if text, _, _ := plugin(t, dir, "ports", instanceName); !strings.Contains(text, "8000 → "+url+"  (started in limactl mcp shell") {
		t.Errorf("ports has no shell line for %s:\n%s", url, text)
	}
	end()
	if out, _, _ := plugin(t, dir, "ports", instanceName, "--session", "pc", "--json"); strings.Contains(out, url) {
		t.Errorf("ports after the command ended: %s", out)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 30*time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the command ended", url)
	}
}
