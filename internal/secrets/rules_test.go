package secrets

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ruledRelay is a relay that terminates unboundHost:443 for method and path rules only (no
// secret), reaching the harness's fake for it, and a client that trusts its session CA only
// (so a request answered at all went through the relay), each connection served by
// ServeRuled with rules, as made by ruledCommand.
// ruledCommand is the command the guest's proxy names behind ruledRelay's connections (the
// agent's text: quotes, a newline).
const ruledCommand = "git push origin 'main'\n--force"

func ruledRelay(t *testing.T, h *harness, rules []string) (*Relay, *Log, *http.Client) {
	t.Helper()
	target := unboundHost + ":443"
	ca, err := OpenCA(filepath.Join(t.TempDir()), []string{target})
	if err != nil {
		t.Fatal(err)
	}
	log := &Log{}
	r := &Relay{Set: &Set{}, CA: ca, RuleTargets: []string{target}, Recorder: log, RootCAs: h.relay.RootCAs, Dial: h.dial,
		IdleTimeout: time.Minute, HandshakeTimeout: time.Minute}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != target {
				return nil, errors.New("the test reaches " + target + " only")
			}
			client, relayEnd := net.Pipe()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = r.ServeRuled(context.Background(), relayEnd, target, rules, ruledCommand)
			}()
			return client, nil
		},
	}}
	t.Cleanup(c.CloseIdleConnections)
	return r, log, c
}

// TestRelayRulesReadOnlyGit: under `HOST:ro` plus `HOST/*/git-upload-pack:POST` (what lets git
// fetch and refuses push), the relay lets reads and the fetch's POST through and answers
// every other request 403 without sending it on: a push's POST, a path a server could read
// otherwise, an upgrade. The log counts both, and never a secret.
func TestRelayRulesReadOnlyGit(t *testing.T) {
	h := newHarness(t)
	_, log, c := ruledRelay(t, h, []string{unboundHost + ":ro", unboundHost + "/*/git-upload-pack:POST"})
	base := "https://" + unboundHost
	for _, cs := range []struct {
		method, path string
		hdr          map[string]string
		want         int
	}{
		{"GET", "/o/r.git/info/refs?service=git-receive-pack", nil, 401}, // the fake asks for credentials: it was reached
		{"HEAD", "/x", nil, 200},
		{"POST", "/o/r.git/git-upload-pack", nil, 200},
		{"POST", "/o/r.git/git-receive-pack", nil, 403},
		{"PUT", "/x", nil, 403},
		{"GET", "/a/%2e%2e/x", nil, 403},
		{"GET", "/ws", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}, 403},
		{"GET", "/after-refusals", nil, 200},
	} {
		before := len(h.requests(unboundHost))
		resp, body := get(t, c, cs.method, base+cs.path, cs.hdr, "")
		if resp.StatusCode != cs.want {
			t.Errorf("%s %s: %d, want %d: %s", cs.method, cs.path, resp.StatusCode, cs.want, body)
		}
		reached := len(h.requests(unboundHost)) > before
		if cs.want == 403 {
			if reached {
				t.Errorf("%s %s was refused, yet the server got it", cs.method, cs.path)
			}
			if cs.method != "HEAD" && !strings.Contains(body, "rules for it") {
				t.Errorf("%s %s: the refusal does not say which rules there are: %q", cs.method, cs.path, body)
			}
		} else if !reached {
			t.Errorf("%s %s was allowed, yet the server never got it", cs.method, cs.path)
		}
	}
	sum := strings.Join(log.RequestsSummary(), "\n")
	if used := log.Summary(); len(used) != 0 {
		t.Errorf("requests that carried no secret are listed as secrets' uses: %q", used)
	}
	if want := unboundHost + ": 4 HTTPS requests allowed by the network rules, 4 refused (the last: GET /ws)"; sum != want {
		t.Errorf("summary %q, want %q", sum, want)
	}
	// A refused request names the command behind its connection (the proxy's, on its line);
	// an allowed one does not need it.
	uses, _ := log.Uses()
	for _, u := range uses {
		if want := map[bool]string{true: ruledCommand, false: ""}[u.Refused]; u.Command != want {
			t.Errorf("%s %s (refused %v) logged with the command %q, want %q", u.Method, u.Path, u.Refused, u.Command, want)
		}
	}
}

// TestRelayRulesRefusesWhatItDoesNotTerminate: ServeRuled serves only its rule targets, with
// rules for them; anything else is ErrNotBound before a byte is read or written.
func TestRelayRulesRefusesWhatItDoesNotTerminate(t *testing.T) {
	h := newHarness(t)
	r, _, _ := ruledRelay(t, h, nil)
	for _, cs := range []struct {
		target string
		rules  []string
	}{
		{anthropicHost + ":443", []string{anthropicHost + ":ro"}},    // not a rule target
		{unboundHost + ":80", []string{unboundHost + ":ro"}},         // another port
		{unboundHost + ":443", []string{unboundHost}},                // a plain entry: not a rule
		{unboundHost + ":443", []string{"other.example:ro"}},         // rules for another host
		{unboundHost + ":443", nil},                                  // none
		{unboundHost + ":443", []string{unboundHost + ":ro", "@go"}}, // a preset among them
	} {
		if err := r.ServeRuled(context.Background(), nopConn(), cs.target, cs.rules, ""); !errors.Is(err, ErrNotBound) {
			t.Errorf("ServeRuled(%s, %q) = %v, want ErrNotBound", cs.target, cs.rules, err)
		}
	}
}

// TestRelayRulesRefusalReadsTheBody: a client that writes a refused request's whole body
// before it reads (npm's publish: a PUT of the package) gets the relay's 403, not a connection
// closed under its write (a network error npm retries for a minute). The pipe holds no byte:
// every byte written is a byte the relay read.
func TestRelayRulesRefusalReadsTheBody(t *testing.T) {
	h := newHarness(t)
	r, log, _ := ruledRelay(t, h, []string{unboundHost + ":ro"})
	target := unboundHost + ":443"
	client, relayEnd := net.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- r.ServeRuled(context.Background(), relayEnd, target, []string{unboundHost + ":ro"}, strings.Repeat("x", 201))
	}()
	pool := x509.NewCertPool()
	pool.AddCert(r.CA.Certificate())
	tc := tls.Client(client, &tls.Config{RootCAs: pool, ServerName: unboundHost})
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(20 * time.Second))
	body := strings.Repeat("p", 1<<20)
	req := "PUT /e2e-project HTTP/1.1\r\nHost: " + unboundHost + "\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(tc, req); err != nil {
		t.Fatalf("writing the refused request's body: %v (the relay closed under the write)", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(msg), "no rule allows") || !strings.Contains(string(msg), "limactl mcp network INSTANCE allow "+unboundHost+":443/e2e-project:PUT, or the a key of limactl mcp watch") {
		t.Errorf("got %d %q, want the relay's 403", resp.StatusCode, msg)
	}
	tc.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeRuled: %v", err)
	}
	if n := len(h.requests(unboundHost)); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
	if sum := strings.Join(log.RequestsSummary(), "\n"); !strings.Contains(sum, "1 refused (the last: PUT /e2e-project)") {
		t.Errorf("summary %q", sum)
	}
	// A command longer than the proxy ever sends is dropped, not logged.
	if uses, _ := log.Uses(); len(uses) != 1 || uses[0].Command != "" {
		t.Errorf("the log of a refusal behind a 201-byte command: %+v", uses)
	}
}
