package watchcmd_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// heldRelay is the session's real relay for github.com:443 under rules, holding in the
// session's host directory dir, that reaches a TLS server of the test's (which counts what it
// gets) instead of GitHub.
type heldRelay struct {
	relay *secrets.Relay
	pool  *x509.CertPool
	mu    sync.Mutex
	got   []string // "METHOD PATH body" of each request the server got
	wg    sync.WaitGroup
}

func newHeldRelay(t *testing.T, dir string) *heldRelay {
	t.Helper()
	h := &heldRelay{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, r.Method+" "+r.URL.Path+" "+string(body))
		h.mu.Unlock()
		fmt.Fprint(w, "server reached")
	}))
	// The server's certificate for github.com, from a CA of its own (another session's CA
	// will do), which the relay trusts in place of the host's roots.
	serverCA, err := secrets.OpenCA(t.TempDir(), []string{"github.com:443"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := serverCA.Leaf("github.com")
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca, err := secrets.OpenCA(dir, []string{"github.com:443"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.Certificate())
	h.relay = &secrets.Relay{Set: &secrets.Set{}, CA: ca, RuleTargets: []string{"github.com:443"}, RootCAs: roots, HoldDir: dir,
		Recorder: &secrets.FileLog{Dir: dir},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		}}
	h.pool = x509.NewCertPool()
	h.pool.AddCert(ca.Certificate())
	t.Cleanup(h.wg.Wait)
	return h
}

// send sends one request through the relay (a connection of its own, served under rules, as
// the guest's proxy hands it over) and gives its status and body on the channel.
func (h *heldRelay) send(method, path, body string, rules []string) <-chan string {
	out := make(chan string, 1)
	client, relayEnd := net.Pipe()
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		_ = h.relay.ServeRuled(context.Background(), relayEnd, "github.com:443", rules, "git push origin main")
	}()
	go func() {
		defer h.wg.Done()
		tc := tls.Client(client, &tls.Config{RootCAs: h.pool, ServerName: "github.com"})
		defer tc.Close()
		tc.SetDeadline(time.Now().Add(2 * time.Minute))
		fmt.Fprintf(tc, "%s %s HTTP/1.1\r\nHost: github.com\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", method, path, len(body), body)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			out <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		out <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	return out
}

func (h *heldRelay) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

func answer(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(90 * time.Second):
		t.Fatal("no answer from the relay in 90 s")
		return ""
	}
}

// TestWatchTUIHeldRelayRequests: while the watch runs (the real command on a tmux pane, its
// record read from a real sshd), the session's real relay holds an HTTPS request its rules
// refuse instead of refusing it at once; the screen lists it HELD with its method and path,
// and o lets that one through to the server (body and all), d refuses it now (the agent reads
// that the person refused it), a adds the rule for exactly it and lets it through. The policy
// changes only with a. When the watch quits, it takes its marker away and the relay refuses at
// once again.
func TestWatchTUIHeldRelayRequests(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	setStoredNetwork(t, f, "allow:github.com:ro")
	writer := guesttest.Connect(t, f.Srv, guest.Options{NoLoginShell: true})
	writeRecord(t, f, writer)
	dir := f.Store.SessionDir(staging.SessionID(f.Workdir))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	h := newHeldRelay(t, dir)
	rules := []string{"github.com:ro"}
	if got := answer(t, h.send("PUT", "/before", "x", rules)); !strings.HasPrefix(got, "403 ") || strings.Contains(got, "was asked") {
		t.Fatalf("with no watch: %q, want refused at once", got)
	}

	s := startWatchTUI(t, f, config, 160)
	const wait = time.Minute
	s.WaitFor(wait, "github.com:443/before:PUT")
	markers := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, secrets.HeldDir, "watched.*"))
		return m
	}
	deadline := time.Now().Add(wait)
	for {
		if m := markers(); len(m) == 1 {
			if st, err := os.Stat(m[0]); err == nil && time.Since(st.ModTime()) < 2*time.Second {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch never marked the session watched")
		}
		time.Sleep(100 * time.Millisecond)
	}

	once := h.send("PUT", "/o/r/releases/1", "the-asset", rules)
	s.WaitFor(wait, "> HELD github.com:443/o/r/releases/1:PUT", "s left", "by git push origin main")
	if n := len(h.requests()); n != 0 {
		t.Fatalf("the server got %d requests while one was held", n)
	}
	s.Keys("o")
	s.WaitFor(wait, "allowed github.com:443/o/r/releases/1:PUT once: that request goes through")
	if got := answer(t, once); got != "200 server reached" {
		t.Errorf("allowed once: %q", got)
	}
	if got := h.requests(); len(got) != 1 || got[0] != "PUT /o/r/releases/1 the-asset" {
		t.Errorf("the server got %q", got)
	}

	denied := h.send("DELETE", "/o/r", "", rules)
	s.WaitFor(wait, "> HELD github.com:443/o/r:DELETE")
	s.Keys("d")
	if got := answer(t, denied); !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "the person watching the session was asked and refused it") {
		t.Errorf("refused by the person: %q", got)
	}

	allowed := h.send("POST", "/o/r.git/git-receive-pack", "pack", rules)
	s.WaitFor(wait, "> HELD github.com:443/o/r.git/git-receive-pack:POST")
	s.Keys("a")
	s.WaitFor(wait, "policy: allow:github.com:ro,github.com:443/o/r.git/git-receive-pack:POST", "the held request goes through")
	if got := answer(t, allowed); got != "200 server reached" {
		t.Errorf("allowed for the session: %q", got)
	}
	if got := h.requests(); len(got) != 2 || got[1] != "POST /o/r.git/git-receive-pack pack" {
		t.Errorf("the server got %q", got)
	}
	st, _, err := f.Store.Load(f.Workdir)
	if err != nil {
		t.Fatal(err)
	}
	if got := staging.NetworkOf(st); got != "allow:github.com:ro,github.com:443/o/r.git/git-receive-pack:POST" {
		t.Errorf("the session's policy: %q", got)
	}

	// The watch quits: it takes its marker away, and the relay refuses at once again (not
	// held until the marker is stale, netpolicy.WatchedFresh later).
	s.Keys("q")
	s.WaitFor(wait, "watch done")
	if m := markers(); len(m) != 0 {
		t.Errorf("the watch quit and left its marker: %q", m)
	}
	start := time.Now()
	if got := answer(t, h.send("PATCH", "/after", "", rules)); !strings.HasPrefix(got, "403 ") || strings.Contains(got, "was asked") {
		t.Errorf("after the watch: %q, want refused at once", got)
	}
	if took := time.Since(start); took > netpolicy.WatchedFresh/2 {
		t.Errorf("after the watch, a refusal took %s", took)
	}
	if _, requests := secrets.Summaries(dir); !strings.Contains(strings.Join(requests, "\n"), "2 HTTPS requests allowed by the network rules (2 of them once, by the person watching), 3 refused") {
		t.Errorf("the log of uses: %q", requests)
	}
}
