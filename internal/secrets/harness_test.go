package secrets

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The harness: fake providers (TLS servers on loopback with their own CA, answering under the
// real providers' names), the relay, and a front that stands in for the guest's proxy: an HTTP
// CONNECT proxy on loopback that hands a bound host's connection to Relay.Serve and tunnels
// every other one opaquely.

// Names the tests bind and use.
const (
	anthropicHost = "api.anthropic.com"
	geminiHost    = "generativelanguage.googleapis.com"
	githubHost    = "github.com"
	unboundHost   = "uploads.example.net" // allowed by the front, bound to nothing
	// Codex's ChatGPT login (login_test.go).
	chatgptHost    = "chatgpt.com"
	openaiAuthHost = "auth.openai.com"
	// Gemini CLI's Google login.
	googleOAuthHost = "oauth2.googleapis.com"
	codeAssistHost  = "cloudcode-pa.googleapis.com"
	googleAPIsHost  = "www.googleapis.com"
)

type harness struct {
	t        *testing.T
	dir      string
	set      *Set
	ca       *CA
	caFile   string // the session CA, as the guest would trust it
	fakeCA   *CA
	fakeFile string            // the fake providers' CA (the host's roots in the test)
	addrs    map[string]string // host:443 -> loopback address of its fake
	relay    *Relay
	log      *Log
	front    string // the front's address
	value    map[string]string
	ph       map[string]string

	mu   sync.Mutex
	seen []seenRequest // every request a fake got

	sseStep   chan struct{}
	serveErrs []error
	// rtt, when set, is how far the fakes are (rttConn), for the relay and the tunnel alike.
	rtt time.Duration
	// dials counts the relay's connections to each fake (host:port).
	dials map[string]int
	// answerFirst, when set, answers a request before answer does (true: it did).
	answerFirst func(host string, w http.ResponseWriter, r *http.Request) bool
}

type seenRequest struct {
	host string
	dump string // the whole request, header and body
	req  *http.Request
}

func (h *harness) requests(host string) []seenRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []seenRequest
	for _, s := range h.seen {
		if s.host == host {
			out = append(out, s)
		}
	}
	return out
}

func (h *harness) allSeen() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, s := range h.seen {
		b.WriteString(s.host + "\n" + s.dump + "\n")
	}
	return b.String()
}

func newHarness(t testing.TB) *harness {
	tt, _ := t.(*testing.T)
	h := &harness{t: tt, dir: t.TempDir(), addrs: map[string]string{}, log: &Log{}, sseStep: make(chan struct{})}
	h.value = map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-api03-REALVALUEanthropic0123456789",
		"GEMINI_API_KEY":    "AIzaREALVALUEgemini/+=&0123456789",
		"GITHUB_TOKEN":      "ghp_REALVALUEgithub0123456789",
	}
	var secrets []Secret
	for _, name := range []string{"ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GITHUB_TOKEN"} {
		sp, err := ParseSpec(name)
		if err != nil {
			t.Fatal(err)
		}
		k, _ := known(name)
		secrets = append(secrets, Secret{Name: name, Value: h.value[name], Placeholder: NewPlaceholder(k.Prefix, k.Length), Hosts: sp.Hosts})
	}
	h.ph = map[string]string{}
	for _, s := range secrets {
		h.ph[s.Name] = s.Placeholder
	}
	set, err := NewSet(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	h.set = set
	if h.ca, err = OpenCA(h.dir, set.Hosts()); err != nil {
		t.Fatal(err)
	}
	h.caFile = filepath.Join(h.dir, CACertFile)
	fakeDir := filepath.Join(h.dir, "fake")
	os.Mkdir(fakeDir, 0o700)
	if h.fakeCA, err = OpenCA(fakeDir, []string{anthropicHost, geminiHost, githubHost, unboundHost, chatgptHost, openaiAuthHost, googleOAuthHost, codeAssistHost, googleAPIsHost}); err != nil {
		t.Fatal(err)
	}
	h.fakeFile = filepath.Join(fakeDir, CACertFile)
	for _, host := range []string{anthropicHost, geminiHost, githubHost, unboundHost, chatgptHost, openaiAuthHost, googleOAuthHost, codeAssistHost, googleAPIsHost} {
		h.addrs[host+":443"] = h.startFake(t, host)
	}
	roots := x509.NewCertPool()
	roots.AddCert(h.fakeCA.Certificate())
	h.relay = &Relay{Set: set, CA: h.ca, Recorder: h.log, RootCAs: roots, Dial: h.dial,
		IdleTimeout: 2 * time.Minute, HandshakeTimeout: time.Minute}
	h.front = h.startFront(t)
	return h
}

func (h *harness) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	a, ok := h.addrs[strings.ToLower(addr)]
	if !ok {
		return nil, fmt.Errorf("the test network has no %s", addr)
	}
	h.mu.Lock()
	if h.dials == nil {
		h.dials = map[string]int{}
	}
	h.dials[strings.ToLower(addr)]++
	h.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, network, a)
	if err != nil || h.rtt == 0 {
		return c, err
	}
	return &rttConn{Conn: c, rtt: h.rtt}, nil
}

// rttConn puts a provider far away: each flight of bytes towards it (the first write, and the
// first after bytes came back) takes rtt to get there and be answered.
type rttConn struct {
	net.Conn
	rtt  time.Duration
	read atomic.Bool // bytes came back since the last flight
	sent atomic.Bool // a flight has been sent
}

func (c *rttConn) Write(p []byte) (int, error) {
	if !c.sent.Swap(true) || c.read.Swap(false) {
		time.Sleep(c.rtt)
	}
	return c.Conn.Write(p)
}

func (c *rttConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.read.Store(true)
	}
	return n, err
}

// startFake starts a fake provider for host.
func (h *harness) startFake(t testing.TB, host string) string {
	leaf, err := h.fakeCA.Leaf(host)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*leaf}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dump, _ := httputil.DumpRequest(r, r.URL.Path != "/hangup") // /hangup never reads its body
		h.mu.Lock()
		h.seen = append(h.seen, seenRequest{host: host, dump: string(dump), req: r})
		first := h.answerFirst
		h.mu.Unlock()
		if first == nil || !first(host, w, r) {
			h.answer(host, w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// answer is what the fakes answer.
func (h *harness) answer(host string, w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/echo":
		// A hostile or careless server: echoes the credentials it got.
		got := r.Header.Get("X-Api-Key") + r.Header.Get("Authorization")
		w.Header().Set("X-Echo", got)
		fmt.Fprintf(w, "you sent %s.", got)
	case r.URL.Path == "/sse":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: one\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-h.sseStep:
		case <-time.After(2 * time.Minute):
		}
		fmt.Fprint(w, "event: two\ndata: {}\n\n")
	case r.URL.Path == "/ws":
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		buf := make([]byte, 4)
		if _, err := io.ReadFull(brw, buf); err == nil {
			conn.Write(buf)
		}
	case strings.HasSuffix(r.URL.Path, "/info/refs"):
		// git's smart HTTP: a 401 asks for credentials; the real token gets the refs.
		_, pass, ok := r.BasicAuth()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if pass != h.value["GITHUB_TOKEN"] {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
		io.WriteString(w, pkt("# service=git-upload-pack\n")+"0000"+
			pkt("1111111111111111111111111111111111111111 HEAD\x00symref=HEAD:refs/heads/main agent=fake\n")+
			pkt("1111111111111111111111111111111111111111 refs/heads/main\n")+"0000")
	case r.URL.Path == "/hangup":
		// A provider that drops the connection before answering.
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	case r.URL.Path == "/close":
		// A provider that ends the connection after its answer.
		w.Header().Set("Connection", "close")
		fmt.Fprint(w, `{"ok":true}`)
	case r.URL.Path == "/big":
		w.Write([]byte(strings.Repeat("x", 1<<20)))
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"host":%q}`, host)
	}
}

// startFront starts the stand-in for the guest's proxy.
func (h *harness) startFront(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.frontConn(ctx, conn)
			}()
		}
	}()
	return ln.Addr().String()
}

func (h *harness) frontConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		io.WriteString(conn, "HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n")
		return
	}
	conn.SetReadDeadline(time.Time{})
	target := req.Host
	if h.set.Bound(target) {
		io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
		if err := h.relay.Serve(ctx, &bufferedConn{Conn: conn, r: br}, target); err != nil {
			h.mu.Lock()
			h.serveErrs = append(h.serveErrs, err)
			h.mu.Unlock()
		}
		return
	}
	up, err := h.dial(ctx, "tcp", target)
	if err != nil {
		io.WriteString(conn, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
		return
	}
	defer up.Close()
	defer context.AfterFunc(ctx, func() { up.Close() })()
	io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(up, br)
		u := up
		if r, ok := u.(*rttConn); ok {
			u = r.Conn
		}
		u.(*net.TCPConn).CloseWrite()
		done <- struct{}{}
	}()
	go func() { io.Copy(conn, up); conn.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// client is a Go client through the front that trusts the session CA and the fakes' CA (the
// guest would trust the system's roots and the session CA).
func (h *harness) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(h.ca.Certificate())
	pool.AddCert(h.fakeCA.Certificate())
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
		Proxy:           func(*http.Request) (*url.URL, error) { return url.Parse("http://" + h.front) },
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}}
}

// rawTLS opens a connection through the front to target and does TLS with serverName,
// trusting the session CA and the fakes' CA.
func (h *harness) rawTLS(t testing.TB, target, serverName string) (*tls.Conn, error) {
	return h.rawTLSWith(t, target, serverName, nil)
}

// rawTLSWith is rawTLS with a client session cache (nil: none), as clients that resume keep.
func (h *harness) rawTLSWith(t testing.TB, target, serverName string, cache tls.ClientSessionCache) (*tls.Conn, error) {
	conn, err := net.DialTimeout("tcp", h.front, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		conn.Close()
		return nil, fmt.Errorf("CONNECT %s: %v %v", target, resp, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(h.ca.Certificate())
	pool.AddCert(h.fakeCA.Certificate())
	tc := tls.Client(&bufferedConn{Conn: conn, r: br}, &tls.Config{ServerName: serverName, RootCAs: pool, NextProtos: []string{"http/1.1"}, ClientSessionCache: cache})
	if err := tc.Handshake(); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// assertNoLeak checks that no fake got a value where it should not have: the unbound host
// never, and a bound host only in the headers the relay puts it in (or key=).
func (h *harness) assertNoLeak(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.seen {
		for name, v := range h.value {
			if !strings.Contains(s.dump, v) && !strings.Contains(s.dump, url.QueryEscape(v)) && !strings.Contains(s.dump, base64.StdEncoding.EncodeToString([]byte(v))[:8]) {
				continue
			}
			if !h.set.Bound(s.host + ":443") {
				t.Errorf("%s's value reached the unbound %s:\n%s", name, s.host, s.dump)
				continue
			}
			rest := s.req.Header.Clone()
			for _, k := range InjectHeaders {
				rest.Del(k)
			}
			var b strings.Builder
			rest.Write(&b)
			q := s.req.URL.Query()
			q.Del("key")
			body := s.dump[strings.Index(s.dump, "\r\n\r\n")+4:]
			if where := b.String() + s.req.URL.Path + q.Encode() + body; strings.Contains(where, v) || strings.Contains(where, url.QueryEscape(v)) {
				t.Errorf("%s's value reached %s outside the injected headers:\n%s", name, s.host, s.dump)
			}
		}
	}
}
