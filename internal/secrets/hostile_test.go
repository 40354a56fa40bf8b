package secrets

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// exchange sends raw bytes on a TLS connection to target through the front and returns
// everything the relay answers until it closes (or the bounded wait ends: an error).
func (h *harness) exchange(t *testing.T, target, serverName, raw string) (string, error) {
	t.Helper()
	tc, err := h.rawTLS(t, target, serverName)
	if err != nil {
		return "", err
	}
	defer tc.Close()
	go io.WriteString(tc, raw)
	out, err := io.ReadAll(tc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%q: the relay neither answered nor closed within the bound", raw[:min(len(raw), 60)])
	}
	for name, v := range h.value {
		if strings.Contains(string(out), v) {
			t.Errorf("%s's value came back towards the guest:\n%s", name, out)
		}
	}
	return string(out), nil
}

// TestRelayHostileRequests: what a hostile agent sends to a bound host through the relay.
// Each gets a clear refusal or a placeholder left as it is; none panics or hangs; no value
// reaches anything but the bound host's injected headers.
func TestRelayHostileRequests(t *testing.T) {
	h := newHarness(t)
	ant, gem := h.ph["ANTHROPIC_API_KEY"], h.ph["GEMINI_API_KEY"]
	other := NewPlaceholder("sk-ant-api03-", 108) // another session's
	const host = "Host: api.anthropic.com\r\n"
	cases := []struct {
		name, raw, status string
	}{
		{"oversized header", "GET / HTTP/1.1\r\n" + host + "X-Big: " + strings.Repeat("a", 200<<10) + "\r\n\r\n", "HTTP/1.1 431"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/1.1 505"},
		{"garbage", "\x16\x03\x01\x00\xff" + strings.Repeat("\x00", 300) + "\r\n\r\n", "HTTP/1.1 400"},
		{"other Host", "GET / HTTP/1.1\r\nHost: uploads.example.net\r\nX-Api-Key: " + ant + "\r\n\r\n", "HTTP/1.1 421"},
		{"absolute target", "GET https://uploads.example.net/ HTTP/1.1\r\n" + host + "X-Api-Key: " + ant + "\r\n\r\n", "HTTP/1.1 400"},
		{"CONNECT inside", "CONNECT uploads.example.net:443 HTTP/1.1\r\n" + host + "X-Api-Key: " + ant + "\r\n\r\n", "HTTP/1.1 4"},
		{"smuggled second request", "POST / HTTP/1.1\r\n" + host + "Content-Length: 90\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: uploads.example.net\r\nX-Api-Key: " + ant + "\r\n\r\n", "HTTP/1.1 "},
		{"two Content-Length", "POST / HTTP/1.1\r\n" + host + "Content-Length: 3\r\nContent-Length: 40\r\nX-Api-Key: " + ant + "\r\n\r\nabc", "HTTP/1.1 400"},
		{"header split in a value", "GET / HTTP/1.1\r\n" + host + "X-Api-Key: " + ant + "\rX-Evil: 1\r\n\r\n", "HTTP/1.1 400"},
	}
	for _, cs := range cases {
		out, err := h.exchange(t, "api.anthropic.com:443", anthropicHost, cs.raw)
		if err != nil {
			t.Errorf("%s: %v", cs.name, err)
			continue
		}
		if !strings.HasPrefix(out, cs.status) {
			t.Errorf("%s: answer %q, want %q…", cs.name, out[:min(len(out), 200)], cs.status)
		}
	}
	if seen := h.requests(unboundHost); len(seen) != 0 {
		t.Errorf("the unbound host got requests through the relay: %v", seen[0].dump)
	}

	// Pipelining: two requests in one write get two answers, in order, each injected.
	before := len(h.requests(anthropicHost))
	req := "GET /a HTTP/1.1\r\n" + host + "X-Api-Key: " + ant + "\r\n\r\n"
	out, _ := h.exchange(t, "api.anthropic.com:443", anthropicHost, req+req+"GET /c HTTP/1.1\r\n"+host+"Connection: close\r\n\r\n")
	if n := strings.Count(out, "HTTP/1.1 200"); n != 3 {
		t.Errorf("pipelined: %d answers\n%s", n, out)
	}
	seen := h.requests(anthropicHost)[before:]
	if len(seen) != 3 || seen[0].req.Header.Get("X-Api-Key") != h.value["ANTHROPIC_API_KEY"] || seen[1].req.Header.Get("X-Api-Key") != h.value["ANTHROPIC_API_KEY"] {
		t.Errorf("pipelined: the provider got %d requests", len(seen))
	}

	// Placeholders that are not this host's (Gemini's sent to Anthropic) or not this
	// session's stay as they are.
	before = len(h.requests(anthropicHost))
	h.exchange(t, "api.anthropic.com:443", anthropicHost, "GET / HTTP/1.1\r\n"+host+"X-Api-Key: "+gem+"\r\nAuthorization: Bearer "+other+"\r\nConnection: close\r\n\r\n")
	seen = h.requests(anthropicHost)[before:]
	if len(seen) != 1 || seen[0].req.Header.Get("X-Api-Key") != gem || seen[0].req.Header.Get("Authorization") != "Bearer "+other {
		t.Errorf("foreign placeholders: %v", seen)
	}

	// TLS for another name on a bound host's connection: refused at the handshake.
	if _, err := h.rawTLS(t, "api.anthropic.com:443", unboundHost); err == nil {
		t.Errorf("the relay presented a certificate for %s", unboundHost)
	}
	h.assertNoLeak(t)
}

// TestRelayUpstreamFailure: a bound host that cannot be reached gets the guest a 502 naming
// it, never anything else.
func TestRelayUpstreamFailure(t *testing.T) {
	h := newHarness(t)
	h.relay.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, fmt.Errorf("no route to %s", addr)
	}
	out, err := h.exchange(t, "api.anthropic.com:443", anthropicHost, "GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nX-Api-Key: "+h.ph["ANTHROPIC_API_KEY"]+"\r\n\r\n")
	if err != nil || !strings.HasPrefix(out, "HTTP/1.1 502") || !strings.Contains(out, "no route to api.anthropic.com:443") {
		t.Errorf("answer %q %v", out, err)
	}
	uses, _ := h.log.Uses()
	if len(uses) != 1 || uses[0].Err == "" || len(uses[0].Secrets) != 0 {
		t.Errorf("uses %+v", uses)
	}
	// A provider whose certificate the host does not trust: refused, never sent.
	h.relay.Dial = h.dial
	h.relay.RootCAs = nil
	out, _ = h.exchange(t, "api.anthropic.com:443", anthropicHost, "GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nX-Api-Key: "+h.ph["ANTHROPIC_API_KEY"]+"\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 502") || !strings.Contains(out, "certificate") {
		t.Errorf("untrusted provider: %q", out)
	}
	if n := len(h.requests(anthropicHost)); n != 0 {
		t.Errorf("the untrusted provider got %d requests", n)
	}
	// A provider that hangs up while the guest still owes part of its body: the guest gets a
	// 502 at once, not after the idle bound (10 min here; the exchange gives up after 2).
	h.relay.RootCAs = x509.NewCertPool()
	h.relay.RootCAs.AddCert(h.fakeCA.Certificate())
	h.relay.IdleTimeout = 10 * time.Minute
	tc, err := h.rawTLS(t, "api.anthropic.com:443", anthropicHost)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	io.WriteString(tc, "POST /hangup HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Length: 100\r\n\r\n0123456789")
	all, err := io.ReadAll(tc)
	if err != nil || !strings.HasPrefix(string(all), "HTTP/1.1 502") {
		t.Errorf("hang-up: %q %v", all, err)
	}
}

// TestRelayIdleEnds: a guest that opens a connection and sends nothing is let go after the
// idle bound.
func TestRelayIdleEnds(t *testing.T) {
	h := newHarness(t)
	h.relay.IdleTimeout = 500 * time.Millisecond
	tc, err := h.rawTLS(t, "api.anthropic.com:443", anthropicHost)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if _, err := io.ReadAll(tc); err != nil {
		t.Errorf("the relay did not end an idle connection: %v", err)
	}
}

// TestRelayRandomHostileRequests: a generator of requests with this session's placeholders
// in random places (header names and values, path, query, body), to the bound and an unbound
// host, through the front; the value reaches only a bound host's injected headers.
func TestRelayRandomHostileRequests(t *testing.T) {
	h := newHarness(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	phs := []string{h.ph["ANTHROPIC_API_KEY"], h.ph["GEMINI_API_KEY"], h.ph["GITHUB_TOKEN"]}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	for i := 0; i < 60; i++ {
		ph := pick(phs)
		hostName := pick([]string{anthropicHost, unboundHost, geminiHost})
		path := pick([]string{"/", "/v1/" + ph, "/x?key=" + ph, "/x?k=" + ph + "&key=" + ph, "/x?akey=" + ph})
		var hdr strings.Builder
		for j := 0; j < 1+rng.IntN(4); j++ {
			name := pick([]string{"X-Api-Key", "Authorization", "X-Goog-Api-Key", "Api-Key", "X-Other", "Cookie", "X-" + ph[len(ph)-6:]})
			val := pick([]string{ph, "Bearer " + ph, "Basic " + b64("u:"+ph), "Basic !!" + ph, ph + ph, strings.ToLower(ph), "x" + ph + "x"})
			fmt.Fprintf(&hdr, "%s: %s\r\n", name, val)
		}
		body := pick([]string{"", ph, `{"k":"` + ph + `"}`})
		raw := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s", path, hostName, hdr.String(), len(body), body)
		out, err := h.exchange(t, hostName+":443", hostName, raw)
		if err != nil {
			t.Errorf("request %d: %v\n%s", i, err, raw)
			continue
		}
		if !strings.HasPrefix(out, "HTTP/1.1 ") {
			t.Errorf("request %d: answer %q\n%s", i, out, raw)
		}
	}
	h.assertNoLeak(t)
	if len(h.requests(unboundHost)) == 0 || len(h.requests(anthropicHost)) == 0 {
		t.Errorf("the generator reached too few hosts")
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestRelayUntrustedCA: a client that does not trust the session CA gets no answer, and the
// relay's error and log say what to fix.
func TestRelayUntrustedCA(t *testing.T) {
	h := newHarness(t)
	conn, err := net.DialTimeout("tcp", h.front, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	io.WriteString(conn, "CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n")
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(&bufferedConn{Conn: conn, r: br}, &tls.Config{ServerName: anthropicHost}) // the host's roots only
	if err := tc.Handshake(); err == nil {
		t.Fatal("a client without the session CA accepted the relay's certificate")
	}
	tc.Close()
	// The relay's answer comes once it has read the alert: wait for it, bounded.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		h.mu.Lock()
		errs := slices.Clone(h.serveErrs)
		h.mu.Unlock()
		if len(errs) > 0 {
			if !strings.Contains(errs[0].Error(), "does not trust the session CA") {
				t.Errorf("error: %v", errs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay said nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if uses, _ := h.log.Uses(); len(uses) != 1 || !strings.Contains(uses[0].Err, "does not trust") {
		t.Errorf("uses %+v", uses)
	}
}
