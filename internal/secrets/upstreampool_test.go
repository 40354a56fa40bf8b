package secrets

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestRelayKeepsProviderConnections: guest connections one after another to a bound host reuse
// the relay's connection to the provider (each request still gets the value); one the provider
// ends (Connection: close) is not kept, and the next guest connection dials anew.
func TestRelayKeepsProviderConnections(t *testing.T) {
	h := newHarness(t)
	pool := x509.NewCertPool()
	pool.AddCert(h.ca.Certificate())
	newClient := func() *http.Client { // a guest connection per request
		return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
			Proxy:             func(*http.Request) (*url.URL, error) { return url.Parse("http://" + h.front) },
			TLSClientConfig:   &tls.Config{RootCAs: pool},
			DisableKeepAlives: true,
		}}
	}
	dials := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.dials[anthropicHost+":443"]
	}
	key := map[string]string{"X-Api-Key": h.ph["ANTHROPIC_API_KEY"]}
	want := []int{1, 1, 1, 2, 2}
	for i, path := range []string{"/v1/a", "/v1/b", "/close", "/v1/c", "/v1/d"} {
		resp, _ := get(t, newClient(), "POST", "https://api.anthropic.com"+path, key, "{}")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		// The relay gives the connection back once the guest's is done: wait for it.
		deadline := time.Now().Add(10 * time.Second)
		for dials() != want[i] && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := dials(); got != want[i] {
			t.Errorf("after %s: %d connections to the provider, want %d", path, got, want[i])
		}
		// The next guest connection comes once this one's provider connection is back.
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range h.requests(anthropicHost) {
		if s.req.Header.Get("X-Api-Key") != h.value["ANTHROPIC_API_KEY"] {
			t.Errorf("%s went without the value", s.req.URL.Path)
		}
	}
}

// TestPoolAlive: a kept connection the provider has closed is not alive; an open one is, and
// stays usable after the check.
func TestPoolAlive(t *testing.T) {
	h := newHarness(t)
	leaf, err := h.fakeCA.Leaf(anthropicHost)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*leaf}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	server := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			server <- c
		}
	}()
	roots := x509.NewCertPool()
	roots.AddCert(h.fakeCA.Certificate())
	dial := func() upConn {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		dc := &deadlineConn{Conn: raw, idle: time.Minute}
		c := tls.Client(dc, &tls.Config{ServerName: anthropicHost, RootCAs: roots})
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		return upConn{c, dc}
	}
	open, closed := dial(), dial()
	s1, s2 := <-server, <-server
	defer s1.Close()
	s2.Close()
	time.Sleep(100 * time.Millisecond)
	if !alive(open) {
		t.Error("an open connection is not alive")
	}
	if alive(closed) {
		t.Error("a connection the provider closed is alive")
	}
	// The open one still carries bytes both ways, with the idle deadline back.
	go s1.Write([]byte("x"))
	var b [1]byte
	if _, err := open.conn.Read(b[:]); err != nil || b[0] != 'x' {
		t.Errorf("after the check: %v %q", err, b)
	}
}
