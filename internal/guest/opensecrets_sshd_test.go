package guest_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// TestOpenSecretsProxy runs secrets under the network policy open against the real sshd: the
// connection asks sshd to listen on a loopback port for it, writes the CA, the bundle and the
// environment file as the login user, and starts the runner with that environment. Through
// the port, a CONNECT to the bound host reaches the relay (the fake provider sees the value,
// the client only ever held the placeholder), a CONNECT to another host is opened from the
// guest's side and passed through, and anything else gets a 400. When the connection ends the
// directory is gone.
func TestOpenSecretsProxy(t *testing.T) {
	srv := sshd.Start(t)
	const value = "sk-ant-api03-the-open-value-0123456789"
	roots, provAddr, hits := guest.FakeProvider(t, value)
	set, err := secrets.NewSet(secrets.Secret{Name: "ANTHROPIC_API_KEY", Value: value, Placeholder: secrets.NewPlaceholder("sk-ant-api03-", 108), Hosts: []string{"api.example.test:443"}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := secrets.OpenSession(t.TempDir(), set, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess.Relay.RootCAs = roots
	sess.Relay.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != "api.example.test:443" {
			return nil, fmt.Errorf("dialled %s", addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, provAddr)
	}
	// Another host, not bound: a plain HTTP server on loopback, reached through the tunnel.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	otherSeen := make(chan string, 4)
	go http.Serve(other, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherSeen <- r.Header.Get("X-Api-Key")
		fmt.Fprint(w, "other host")
	}))

	conn := guesttest.Connect(t, srv, guest.Options{NoLoginShell: true})
	if err := conn.UseOpenSecrets(&guest.AgentSecrets{Setup: sess.Setup(), Serve: sess.Serve}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	envFile, err := conn.EnvFile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := path.Dir(envFile)
	if !strings.HasPrefix(dir, srv.Home+"/.cache/limactl-mcp/secrets/") {
		t.Fatalf("env file %s", envFile)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, envFile: 0o600, dir + "/ca.pem": 0o600, dir + "/bundle.pem": 0o600} {
		if fi, err := os.Lstat(name); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", name, fi.Mode(), err, want)
		}
	}

	// The runner's commands have the environment: placeholder, proxy, CA.
	res, err := conn.Exec(ctx, guest.ExecRequest{Argv: []string{"sh", "-c", "echo $ANTHROPIC_API_KEY; echo $HTTPS_PROXY; echo $SSL_CERT_FILE; echo $NODE_EXTRA_CA_CERTS; echo http_proxy=$http_proxy"}, Dir: srv.Home, HeadBytes: 4096, TailBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout.Head)), "\n")
	placeholder := strings.TrimPrefix(set.Env()[0], "ANTHROPIC_API_KEY=")
	if len(lines) != 5 || lines[0] != placeholder || !strings.HasPrefix(lines[1], "http://127.0.0.1:") || lines[2] != dir+"/bundle.pem" || lines[3] != dir+"/ca.pem" || lines[4] != "http_proxy=" {
		t.Fatalf("the commands' environment: %q (%+v)", lines, res)
	}
	proxyAddr := strings.TrimPrefix(lines[1], "http://")
	bundle, err := os.ReadFile(dir + "/bundle.pem")
	if err != nil || !strings.Contains(string(bundle), strings.TrimSpace(string(sess.CA.CertPEM()))) {
		t.Fatalf("the bundle lacks the session CA: %v", err)
	}
	if b, _ := os.ReadFile(envFile); strings.Contains(string(b), value) {
		t.Fatal("the value is in the guest's environment file")
	}

	dialProxy := func(head string) (net.Conn, *bufio.Reader, *http.Response) {
		t.Helper()
		c, err := net.Dial("tcp", proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: %v", head, err)
		}
		return c, br, resp
	}

	// The bound host: TLS with the session CA, the placeholder in, the value out.
	c, br, resp := dialProxy("CONNECT API.example.test.:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n")
	if resp.StatusCode != 200 || br.Buffered() != 0 {
		t.Fatalf("CONNECT to the bound host: %s", resp.Status)
	}
	guestCAs := x509.NewCertPool()
	guestCAs.AddCert(sess.CA.Certificate())
	tc := tls.Client(c, &tls.Config{ServerName: "api.example.test", RootCAs: guestCAs})
	fmt.Fprintf(tc, "GET /v1/models HTTP/1.1\r\nHost: api.example.test\r\nX-Api-Key: %s\r\nConnection: close\r\n\r\n", placeholder)
	pr, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(pr.Body)
	c.Close()
	if string(body) != "got value: true" || hits.Load() != 1 {
		t.Fatalf("the provider answered %q (hits %d)", body, hits.Load())
	}
	if uses, _ := sess.Log.Log.Uses(); len(uses) != 1 || uses[0].Host != "api.example.test:443" || len(uses[0].Secrets) != 1 {
		t.Errorf("uses logged: %+v", uses)
	}

	// Another host: passed through from the guest's side, the placeholder stays one.
	c, br, resp = dialProxy(fmt.Sprintf("CONNECT %s HTTP/1.1\r\n\r\n", other.Addr()))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT to another host: %s", resp.Status)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Api-Key: %s\r\nConnection: close\r\n\r\n", placeholder)
	or, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(or.Body)
	c.Close()
	if string(body) != "other host" || <-otherSeen != placeholder {
		t.Fatalf("the other host answered %q", body)
	}

	// What the proxy does not serve: a clear 400, and the proxy goes on.
	for _, head := range []string{
		"GET http://api.example.test/ HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
		"CONNECT api.example.test HTTP/1.1\r\n\r\n",
		"CONNECT api.example.test:99999 HTTP/1.1\r\n\r\n",
		"CONNECT a:1 HTTP/1.1\r\nX: " + strings.Repeat("a", 20<<10) + "\r\n\r\n",
	} {
		c, _, resp := dialProxy(head)
		c.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%.60q: %s", head, resp.Status)
		}
	}
	// A host that does not answer: 502 from the guest's side.
	c, _, resp = dialProxy("CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n")
	c.Close()
	if resp.StatusCode != 502 {
		t.Errorf("an unreachable host: %s", resp.Status)
	}

	conn.Close()
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the secrets' directory is left after the connection: %v", err)
	}
	if hits.Load() != 1 {
		t.Errorf("the provider was reached %d times", hits.Load())
	}
}
