package enforce

import (
	"fmt"
	"net"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProxyHTTPRules: method and path rules decide plain HTTP requests one by one, refuse a
// tunnel (CONNECT) to a host they alone name, and refuse paths a server could read otherwise.
func TestProxyHTTPRules(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost:ro,127.0.0.1/files/*:GET+POST")
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	ro := fmt.Sprintf("http://localhost:%d", port)
	files := fmt.Sprintf("http://127.0.0.1:%d", port)

	if out, code := f.curlAs(t, ro+"/any/thing"); code != 0 || !strings.Contains(out, "hello GET /any/thing") {
		t.Fatalf("GET under :ro: exit %d\n%s", code, out)
	}
	if out, code := f.curlAs(t, "-I", ro+"/x"); code != 0 || !strings.Contains(out, "200 OK") {
		t.Fatalf("HEAD under :ro: exit %d\n%s", code, out)
	}
	out, _ := f.curlAs(t, "-i", "-d", "12345", ro+"/upload")
	if !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, "POST /upload: no rule allows this method on this path") || strings.Contains(out, "hello") {
		t.Errorf("POST under :ro not refused:\n%s", out)
	}
	out, _ = f.curlAs(t, "-i", "-X", "PUT", ro+"/x")
	if !strings.Contains(out, "403 Forbidden") {
		t.Errorf("PUT under :ro not refused:\n%s", out)
	}
	// HTTPS (a tunnel) cannot be read: refused, and the log says why.
	if out, code := f.curlAs(t, "-p", ro+"/any"); code == 0 || !strings.Contains(out, "403") {
		t.Errorf("CONNECT to a host of HTTP rules only: exit %d\n%s", code, out)
	}

	if out, code := f.curlAs(t, "-d", "12345", files+"/files/a.txt"); code != 0 || !strings.Contains(out, "hello POST /files/a.txt body=5") {
		t.Fatalf("POST under a path rule: exit %d\n%s", code, out)
	}
	for _, bad := range []string{files + "/other", files + "/files", files + "/files/../other", files + "/files/%2e%2e/other", files + "/files/a%2Fb"} {
		out, _ := f.curlAs(t, "-i", "--path-as-is", bad)
		if !strings.Contains(out, "403 Forbidden") || strings.Contains(out, "hello") {
			t.Errorf("%s not refused:\n%s", bad, out)
		}
	}
	out, _ = f.curlAs(t, "-i", "-X", "DELETE", files+"/files/a.txt")
	if !strings.Contains(out, "403 Forbidden") {
		t.Errorf("DELETE under GET+POST not refused:\n%s", out)
	}
	out, _ = f.curlAs(t, "-i", "-H", "Transfer-Encoding: chunked", "-d", "12345", files+"/files/a")
	if !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, "chunked body") {
		t.Errorf("a chunked POST under a rule not refused:\n%s", out)
	}

	reasons := map[string]bool{}
	for _, e := range f.logEntries(t) {
		if e.Verdict == "blocked" {
			reasons[e.Reason] = true
		}
	}
	// (refusals are rate-limited per destination: the first three of each are logged)
	for _, want := range []string{"method or path not allowed", "tunnel under http rules", "request path refused"} {
		if !reasons[want] {
			t.Errorf("no refusal logged with reason %q: %v", want, reasons)
		}
	}
}

// TestProxyHTTPRuleForwardsOneRequest: under a rule, a second request pipelined after an
// allowed one never reaches the server (the proxy forwards the head and the body its
// Content-Length gives, nothing more).
func TestProxyHTTPRuleForwardsOneRequest(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	f := startProxyFixture(t, "none")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- ""
			return
		}
		defer c.Close()
		var all []byte
		buf := make([]byte, 4096)
		_ = c.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
		for {
			n, err := c.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				break
			}
		}
		got <- string(all)
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	u, _ := user.Lookup(f.agent)
	uid, _ := strconv.Atoi(u.Uid)
	writePolicy(t, f.layout, UserPolicy{User: "lmcp-test", UID: uid, Policy: "allow:localhost:ro"})
	proxyPort := f.addr[strings.LastIndexByte(f.addr, ':')+1:]
	script := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%s
printf 'GET http://localhost:%d/a HTTP/1.1\r\nHost: localhost:%d\r\nContent-Length: 0\r\n\r\nPOST /steal HTTP/1.1\r\nHost: localhost\r\nContent-Length: 6\r\n\r\nsecret' >&3
timeout 10 cat <&3`, proxyPort, port, port)
	out, err := exec.Command("runuser", "-u", f.agent, "--", "bash", "-c", script).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "200 OK") {
		t.Fatalf("the allowed GET: %v\n%s", err, out)
	}
	seen := <-got
	if !strings.HasPrefix(seen, "GET /a HTTP/1.1\r\n") {
		t.Fatalf("the server did not get the GET:\n%q", seen)
	}
	if strings.Contains(seen, "POST") || strings.Contains(seen, "secret") {
		t.Errorf("the pipelined POST reached the server:\n%q", seen)
	}
}
