package secrets

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, c *http.Client, method, u string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestRelayInjectsGo: Go's net/http through the relay; each header form gets the value, the
// log counts it, a placeholder anywhere else stays one.
func TestRelayInjectsGo(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	ant, gem, gh := h.ph["ANTHROPIC_API_KEY"], h.ph["GEMINI_API_KEY"], h.ph["GITHUB_TOKEN"]
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+gh))
	cases := []struct {
		url, header, value string
		check              func(r *http.Request) string
	}{
		{"https://api.anthropic.com/v1/messages", "X-Api-Key", ant, func(r *http.Request) string { return r.Header.Get("X-Api-Key") }},
		{"https://api.anthropic.com/v1/messages", "Authorization", "Bearer " + ant, func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") }},
		{"https://generativelanguage.googleapis.com/v1beta/models", "X-Goog-Api-Key", gem, func(r *http.Request) string { return r.Header.Get("X-Goog-Api-Key") }},
		{"https://generativelanguage.googleapis.com/v1beta/models?alt=sse&key=" + gem, "", "", func(r *http.Request) string { return r.URL.Query().Get("key") }},
		{"https://api.github.com/user", "Authorization", "token " + gh, func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "token ") }},
		{"https://github.com/o/r.git/info/refs?service=git-upload-pack", "Authorization", basic, func(r *http.Request) string { _, p, _ := r.BasicAuth(); return p }},
	}
	for i, cs := range cases {
		hdr := map[string]string{"X-Other": ant, "Content-Type": "application/json"}
		if cs.header != "" {
			hdr[cs.header] = cs.value
		}
		resp, _ := get(t, c, "POST", cs.url, hdr, `{"key":"`+ant+`"}`)
		u, _ := url.Parse(cs.url)
		seen := h.requests(u.Hostname())
		if u.Hostname() == "api.github.com" {
			// github's API host has no fake of its own in the test network.
			if resp.StatusCode != http.StatusBadGateway {
				t.Errorf("case %d: api.github.com without a fake: %d", i, resp.StatusCode)
			}
			continue
		}
		if len(seen) == 0 {
			t.Fatalf("case %d: the fake got nothing (status %d)", i, resp.StatusCode)
		}
		r := seen[len(seen)-1].req
		name := map[string]string{anthropicHost: "ANTHROPIC_API_KEY", geminiHost: "GEMINI_API_KEY", githubHost: "GITHUB_TOKEN"}[u.Hostname()]
		if got := cs.check(r); got != h.value[name] {
			t.Errorf("case %d: the provider got %q, want the value", i, got)
		}
		if r.Header.Get("X-Other") != ant {
			t.Errorf("case %d: X-Other is %q, want the placeholder kept", i, r.Header.Get("X-Other"))
		}
	}
	if !strings.Contains(strings.Join(h.log.Summary(), "\n"), "ANTHROPIC_API_KEY used 2 times, only with api.anthropic.com") {
		t.Errorf("summary: %q", h.log.Summary())
	}
	uses, _ := h.log.Uses()
	for _, u := range uses {
		for _, v := range h.value {
			if strings.Contains(u.Path+u.Err+u.Host, v) {
				t.Errorf("a use holds a value: %+v", u)
			}
		}
	}
	if h.log.Count("GITHUB_TOKEN", "api.github.com:443") != 0 {
		t.Errorf("a failed dial counted as a use")
	}
	h.assertNoLeak(t)
}

// TestRelayUnboundHostGetsPlaceholder: a placeholder sent to an allowed host that is bound to
// nothing stays a placeholder (the front tunnels it; the relay is never asked).
func TestRelayUnboundHostGetsPlaceholder(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	ph := h.ph["ANTHROPIC_API_KEY"]
	get(t, c, "POST", "https://uploads.example.net/up?key="+h.ph["GEMINI_API_KEY"], map[string]string{"X-Api-Key": ph, "Authorization": "Bearer " + ph}, ph)
	seen := h.requests(unboundHost)
	if len(seen) != 1 || !strings.Contains(seen[0].dump, ph) {
		t.Fatalf("the unbound host got %v", seen)
	}
	if err := h.relay.Serve(context.Background(), nopConn(), "uploads.example.net:443"); !errors.Is(err, ErrNotBound) {
		t.Errorf("Serve on an unbound host: %v", err)
	}
	if err := h.relay.Serve(context.Background(), nopConn(), "api.anthropic.com:80"); !errors.Is(err, ErrNotBound) {
		t.Errorf("Serve on a bound host's other port: %v", err)
	}
	h.assertNoLeak(t)
}

func nopConn() net.Conn {
	a, b := net.Pipe()
	b.Close()
	return a
}

// TestRelayScrubsEcho: a bound host that echoes the value gets it put back to the placeholder
// on the way to the guest (header and body).
func TestRelayScrubsEcho(t *testing.T) {
	h := newHarness(t)
	ph := h.ph["ANTHROPIC_API_KEY"]
	resp, body := get(t, h.client(), "GET", "https://api.anthropic.com/echo", map[string]string{"X-Api-Key": ph}, "")
	mask := echoMask(h.set.For("api.anthropic.com:443")[0])
	if !strings.HasPrefix(ph, mask) {
		t.Fatalf("mask %q of placeholder %q", mask, ph)
	}
	if body != "you sent "+mask+"." {
		t.Errorf("body %q", body)
	}
	if e := resp.Header.Get("X-Echo"); e != mask {
		t.Errorf("X-Echo %q", e)
	}
	// The scrubber across reads: a value split anywhere.
	v := h.value["ANTHROPIC_API_KEY"]
	for cut := 1; cut < len(v); cut += 7 {
		src := io.MultiReader(strings.NewReader("a"+v[:cut]), strings.NewReader(v[cut:]+"b"+v[:3]))
		out, _ := io.ReadAll(&scrubReader{r: src, s: newScrubber(h.set.For("api.anthropic.com:443"))})
		if string(out) != "a"+mask+"b"+v[:3] {
			t.Errorf("cut %d: %q", cut, out)
		}
	}
}

// TestRelayStreams: an SSE response reaches the client event by event (the second is sent
// only once the client has the first), keep-alive reuses the connection, a websocket upgrade
// is tunnelled.
func TestRelayStreams(t *testing.T) {
	h := newHarness(t)
	tc, err := h.rawTLS(t, "api.anthropic.com:443", anthropicHost)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	br := bufio.NewReader(tc)
	io.WriteString(tc, "GET /sse HTTP/1.1\r\nHost: api.anthropic.com\r\nX-Api-Key: "+h.ph["ANTHROPIC_API_KEY"]+"\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "event: one\n" {
		t.Fatalf("first event: %q %v", line, err)
	}
	close(h.sseStep)
	rest, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(rest), "event: two") {
		t.Errorf("rest %q", rest)
	}
	// The same connection again (keep-alive), then a websocket.
	io.WriteString(tc, "GET /ws HTTP/1.1\r\nHost: api.anthropic.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(tc, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Errorf("websocket echo %q %v", buf, err)
	}
	if n := len(h.requests(anthropicHost)); n != 2 {
		t.Errorf("the fake got %d requests, want 2", n)
	}
}

// TestRelayRealClients: curl, python3 (urllib and requests), node and git, through the front,
// trusting the session CA the way the guest will (the variables each reads).
func TestRelayRealClients(t *testing.T) {
	h := newHarness(t)
	// The fakes' CA stands for the public roots: a bundle of both, as the guest's system
	// store will hold the public roots and the session CA.
	bundle := h.dir + "/bundle.pem"
	os.WriteFile(bundle, append(h.ca.CertPEM(), mustRead(t, h.fakeFile)...), 0o644)
	proxy := "http://" + h.front
	env := append(os.Environ(), "https_proxy="+proxy, "HTTPS_PROXY="+proxy, "no_proxy=", "NO_PROXY=",
		"SSL_CERT_FILE="+bundle, "CURL_CA_BUNDLE="+bundle, "REQUESTS_CA_BUNDLE="+bundle, "NODE_EXTRA_CA_CERTS="+bundle, "GIT_SSL_CAINFO="+bundle,
		"GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+h.dir)
	ant := h.ph["ANTHROPIC_API_KEY"]
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd = exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	want := func(client string, before int) {
		seen := h.requests(anthropicHost)
		if len(seen) != before+1 {
			t.Errorf("%s: the provider got %d requests, want 1", client, len(seen)-before)
			return
		}
		r := seen[len(seen)-1].req
		if r.Header.Get("X-Api-Key") != h.value["ANTHROPIC_API_KEY"] {
			t.Errorf("%s: the provider got x-api-key %q", client, r.Header.Get("X-Api-Key"))
		}
	}
	n := len(h.requests(anthropicHost))
	out := run("curl", "-sS", "--max-time", "100", "-H", "x-api-key: "+ant, "-H", "content-type: application/json", "-d", `{"model":"x"}`, "https://api.anthropic.com/v1/messages")
	if !strings.Contains(out, `"ok":true`) {
		t.Errorf("curl: %s", out)
	}
	want("curl", n)

	n = len(h.requests(anthropicHost))
	out = run("python3", "-c", `
import sys, urllib.request
r = urllib.request.Request("https://api.anthropic.com/v1/messages", data=b"{}", headers={"x-api-key": sys.argv[1], "content-type": "application/json"})
print(urllib.request.urlopen(r, timeout=100).read().decode())
`, ant)
	if !strings.Contains(out, `"ok":true`) {
		t.Errorf("python3 urllib: %s", out)
	}
	want("python3 urllib", n)

	if exec.Command("python3", "-c", "import requests").Run() == nil {
		n = len(h.requests(anthropicHost))
		out = run("python3", "-c", `
import sys, requests
print(requests.post("https://api.anthropic.com/v1/messages", json={}, headers={"x-api-key": sys.argv[1]}, timeout=100).text)
`, ant)
		if !strings.Contains(out, `"ok":true`) {
			t.Errorf("python3 requests: %s", out)
		}
		want("python3 requests", n)
	} else {
		t.Log("python3 has no requests module: urllib only")
	}

	// Node 20's fetch does not read proxy variables; https.request over a CONNECT tunnel is
	// what its agents (and the guest's transparent path) do.
	n = len(h.requests(anthropicHost))
	out = run("node", "-e", `
const http = require("http"), https = require("https"), tls = require("tls");
const p = new URL(process.env.https_proxy);
http.request({host: p.hostname, port: p.port, method: "CONNECT", path: "api.anthropic.com:443"}).on("connect", (res, socket) => {
  const req = https.request({host: "api.anthropic.com", port: 443, path: "/v1/messages", method: "POST",
    headers: {"x-api-key": process.argv[1], "content-type": "application/json"},
    createConnection: () => tls.connect({socket, servername: "api.anthropic.com"})}, r => {
    let b = ""; r.on("data", d => b += d); r.on("end", () => console.log(b));
  });
  req.on("error", e => { console.error(e.message); process.exit(1); });
  req.end("{}");
}).on("error", e => { console.error(e.message); process.exit(1); }).end();
`, ant)
	if !strings.Contains(out, `"ok":true`) {
		t.Errorf("node: %s", out)
	}
	want("node", n)

	// git over HTTPS: the token as Basic password, sent after the 401.
	out = run("git", "ls-remote", "https://x-access-token:"+h.ph["GITHUB_TOKEN"]+"@github.com/o/r.git")
	if !strings.Contains(out, "refs/heads/main") {
		t.Errorf("git ls-remote: %s", out)
	}
	h.assertNoLeak(t)
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRelayResumesTLSSessions: a client that keeps its TLS sessions (curl within one process,
// Node's and Go's agents) resumes on its next connection to a bound host instead of a full
// handshake, and a request on the resumed connection still gets the value. Without the
// relay's shared ticket keys, no connection ever resumed.
func TestRelayResumesTLSSessions(t *testing.T) {
	h := newHarness(t)
	ant := h.ph["ANTHROPIC_API_KEY"]
	cache := tls.NewLRUClientSessionCache(8)
	for i := range 3 {
		tc, err := h.rawTLSWith(t, anthropicHost+":443", anthropicHost, cache)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if resumed := tc.ConnectionState().DidResume; resumed != (i > 0) {
			t.Errorf("connection %d: resumed %v", i, resumed)
		}
		fmt.Fprintf(tc, "GET /v1/models HTTP/1.1\r\nHost: %s\r\nX-Api-Key: %s\r\nConnection: close\r\n\r\n", anthropicHost, ant)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		tc.Close()
		seen := h.requests(anthropicHost)
		if len(seen) != i+1 || seen[i].req.Header.Get("X-Api-Key") != h.value["ANTHROPIC_API_KEY"] {
			t.Fatalf("connection %d: the provider got %d requests, the last without the value", i, len(seen))
		}
	}
	h.assertNoLeak(t)
}
