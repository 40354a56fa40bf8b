package guest

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/keyauth"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// TestRelayOverStreamlocalForward runs the secrets relay the way a session does: the real sshd
// listens on a unix socket for our connection (streamlocal forward), a client there writes the
// proxy's line and speaks TLS to the bound host through it, and the relay on this side puts the
// value in and reaches a fake provider (TLS, its own CA) on loopback.
func TestRelayOverStreamlocalForward(t *testing.T) {
	srv := sshd.Start(t)
	const value = "sk-ant-api03-the-real-value-0123456789"
	roots, provAddr, hits := fakeProvider(t, value)

	set, err := secrets.NewSet(secrets.Secret{Name: "ANTHROPIC_API_KEY", Value: value, Placeholder: secrets.NewPlaceholder("sk-ant-api03-", 108), Hosts: []string{"api.example.test:443"}})
	if err != nil {
		t.Fatal(err)
	}
	sessCA, err := secrets.OpenCA(t.TempDir(), set.Hosts())
	if err != nil {
		t.Fatal(err)
	}
	relay := &secrets.Relay{Set: set, CA: sessCA, RootCAs: roots, IdleTimeout: time.Minute,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != "api.example.test:443" {
				return nil, fmt.Errorf("dialled %s", addr)
			}
			return (&net.Dialer{}).DialContext(ctx, network, provAddr)
		}}

	d, err := sshlink.NewDirect(context.Background(), target(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	sock := filepath.Join(srv.Home, "relay-test.sock")
	srv.Run(t, "rm", "-f", sock)
	ln, err := d.ListenUnix(sock)
	if err != nil {
		t.Fatalf("streamlocal forward: %v", err)
	}
	// startRelay's loop, on this socket (its own path is the guest's /run/limactl-mcp/...).
	t.Cleanup(serveRelay(ln, &AgentSecrets{Serve: relay.Serve}, slog.New(slog.DiscardHandler)))

	guestCAs := x509.NewCertPool()
	guestCAs.AddCert(sessCA.Certificate())
	requestOn := func(dial func() (net.Conn, error), line string) (string, error) {
		c, err := dial()
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(60 * time.Second))
		if line != "" {
			if _, err := io.WriteString(c, line); err != nil {
				return "", err
			}
		}
		tc := tls.Client(c, &tls.Config{ServerName: "api.example.test", RootCAs: guestCAs})
		ph := set.Env()[0][len("ANTHROPIC_API_KEY="):]
		fmt.Fprintf(tc, "GET /v1/models HTTP/1.1\r\nHost: api.example.test\r\nX-Api-Key: %s\r\nConnection: close\r\n\r\n", ph)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	request := func(line string) (string, error) {
		return requestOn(func() (net.Conn, error) { return net.Dial("unix", sock) }, line)
	}
	body, err := request("api.example.test:443\n")
	if err != nil || body != "got value: true" {
		t.Fatalf("through the forward: %q, %v", body, err)
	}
	// Not a bound host, a line too long, no line: closed, the provider never reached.
	before := hits.Load()
	for _, line := range []string{"evil.example:443\n", strings.Repeat("a", 400) + ":443\n", "api.example.test\n", "10.0.0.1:443\n"} {
		if body, err := request(line); err == nil {
			t.Errorf("line %.40q: answered %q", line, body)
		}
	}
	if hits.Load() != before {
		t.Errorf("the provider was reached by a refused line")
	}
	// An end that never sends its line is let go (relayLineTimeout, here shortened by the
	// client closing: the accept loop is not held).
	c, err := net.Dial("unix", sock)
	if err == nil {
		c.Close()
	}
	if body, err := request("api.example.test:443\n"); err != nil || body != "got value: true" {
		t.Fatalf("after the refusals: %q, %v", body, err)
	}

	// The relay's port on the host (what the guest's proxy reaches through the VM's NAT):
	// served once the other end proves it holds the key, with its line; a connection that
	// does not is closed with a warning, and the provider is not reached.
	key := keyauth.NewKey()
	portLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logged.Write(b)
	}), nil))
	t.Cleanup(serveRelayPort(portLn, key, &AgentSecrets{Serve: relay.Serve}, logger))
	proven := func(k, line string) func() (net.Conn, error) {
		return func() (net.Conn, error) {
			c, err := net.Dial("tcp", portLn.Addr().String())
			if err != nil {
				return nil, err
			}
			secret, _ := keyauth.ParseKey(k)
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if err := keyauth.Prove(c, netpolicy.RelayHello, secret, line); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}
	}
	if body, err := requestOn(proven(key, "api.example.test:443"), ""); err != nil || body != "got value: true" {
		t.Fatalf("through the relay's port: %q, %v", body, err)
	}
	before = hits.Load()
	if _, err := requestOn(proven(keyauth.NewKey(), "api.example.test:443"), ""); !errors.Is(err, keyauth.ErrNotProven) {
		t.Errorf("another key: %v, want the relay not proven", err)
	}
	plain := func() (net.Conn, error) { return net.Dial("tcp", portLn.Addr().String()) }
	if body, err := requestOn(plain, "api.example.test:443\n"); err == nil {
		t.Errorf("the line alone, without the handshake: answered %q", body)
	}
	if body, err := requestOn(proven(key, "evil.example:443"), ""); err == nil {
		t.Errorf("a proven line to an unbound host: answered %q", body)
	}
	if hits.Load() != before {
		t.Errorf("the provider was reached by a connection to the port that was refused")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		logMu.Lock()
		out := logged.String()
		logMu.Unlock()
		if strings.Count(out, "secrets relay") >= 3 && strings.Contains(out, "was refused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refusals at the port were not all logged:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// The ControlMaster's transport does not forward: a clear error, not a silent direct path.
func TestMasterTransportRefusesForward(t *testing.T) {
	m := sshlink.NewMasterTransport(&sshlink.Master{})
	if _, err := m.ListenUnix("/run/x.sock"); !errors.Is(err, sshlink.ErrNoForward) {
		t.Fatalf("got %v", err)
	}
}

// TestRelayOfTheSecondProcess: two processes of one session (serve, then shell) each resolve
// their values and open the session's secrets; the second takes the guest's socket (as the
// guest's setup does: the socket removed, listened on again). A request carrying the
// placeholder the first process gave the guest still gets the value, put in by the second's
// relay.
func TestRelayOfTheSecondProcess(t *testing.T) {
	srv := sshd.Start(t)
	const value = "sk-ant-api03-the-real-value-0123456789"
	roots, provAddr, _ := fakeProvider(t, value)

	stateDir := t.TempDir() // the session's host state directory
	sock := filepath.Join(srv.Home, "relay-second.sock")
	// process opens the session's secrets as a process of its own would (its own value read,
	// its own fresh placeholder), and takes the guest's socket.
	process := func() *secrets.Session {
		set, err := secrets.NewSet(secrets.Secret{Name: "ANTHROPIC_API_KEY", Value: value, Placeholder: secrets.NewPlaceholder("sk-ant-api03-", 108), Hosts: []string{"api.example.test:443"}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := secrets.OpenSession(stateDir, set, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Relay.RootCAs, s.Relay.IdleTimeout = roots, time.Minute
		s.Relay.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, provAddr)
		}
		d, err := sshlink.NewDirect(context.Background(), target(srv))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		srv.Run(t, "rm", "-f", sock)
		ln, err := d.ListenUnix(sock)
		if err != nil {
			t.Fatalf("streamlocal forward: %v", err)
		}
		t.Cleanup(serveRelay(ln, &AgentSecrets{Serve: s.Serve}, slog.New(slog.DiscardHandler)))
		return s
	}
	first := process()
	firstPlaceholder := strings.TrimPrefix(first.Setup().Env[0], "ANTHROPIC_API_KEY=")
	second := process()

	guestCAs := x509.NewCertPool() // the guest trusts the CA of the last setup
	if !guestCAs.AppendCertsFromPEM([]byte(second.Setup().CAPEM)) {
		t.Fatal("no CA")
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	io.WriteString(c, "api.example.test:443\n")
	tc := tls.Client(c, &tls.Config{ServerName: "api.example.test", RootCAs: guestCAs})
	fmt.Fprintf(tc, "GET /v1/models HTTP/1.1\r\nHost: api.example.test\r\nX-Api-Key: %s\r\nConnection: close\r\n\r\n", firstPlaceholder)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "got value: true" {
		t.Fatalf("the first process's placeholder through the second's relay: %q, %v", body, err)
	}
	if got := strings.Join(second.Log.Log.Summary(), ""); !strings.Contains(got, "ANTHROPIC_API_KEY used 1 time") {
		t.Errorf("the second process's relay did not put it in: %q (the first's: %q)", got, first.Log.Log.Summary())
	}
}

// fakeProvider is api.example.test on loopback, with a CA of its own (roots trust it), at
// addr; it answers whether it got value in X-Api-Key, and counts the requests (hits).
func fakeProvider(t *testing.T, value string) (roots *x509.CertPool, addr string, hits *atomic.Int64) {
	t.Helper()
	provCA, err := secrets.OpenCA(t.TempDir(), []string{"api.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := provCA.Leaf("api.example.test")
	if err != nil {
		t.Fatal(err)
	}
	pln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*leaf}})
	if err != nil {
		t.Fatal(err)
	}
	hits = &atomic.Int64{}
	prov := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "got value: %v", r.Header.Get("X-Api-Key") == value)
	})}
	go prov.Serve(pln)
	t.Cleanup(func() { prov.Close() })
	roots = x509.NewCertPool()
	roots.AddCert(provCA.Certificate())
	return roots, pln.Addr().String(), hits
}
