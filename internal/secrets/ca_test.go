package secrets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCAKeepsItsKeyAndReloads(t *testing.T) {
	dir := t.TempDir()
	hosts := []string{"api.anthropic.com:443", "github.com:443", "api.github.com:443"}
	ca, err := OpenCA(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, CAKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	again, err := OpenCA(dir, hosts)
	if err != nil || !again.Certificate().Equal(ca.Certificate()) {
		t.Fatalf("reopened: a different CA (%v)", err)
	}
	other, err := OpenCA(dir, []string{"api.openai.com:443"})
	if err != nil || other.Certificate().Equal(ca.Certificate()) {
		t.Fatalf("other hosts: the same CA (%v)", err)
	}
	os.Chmod(filepath.Join(dir, CAKeyFile), 0o644)
	if _, err := OpenCA(dir, []string{"api.openai.com:443"}); err == nil || !strings.Contains(err.Error(), "too open") {
		t.Errorf("a key readable by others: %v", err)
	}
	if _, err := ca.Leaf("example.com"); err == nil {
		t.Errorf("a leaf for an unbound host")
	}
	l1, err := ca.Leaf("API.anthropic.com")
	l2, _ := ca.Leaf("api.anthropic.com")
	if err != nil || l1 != l2 {
		t.Errorf("leaf not cached: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	if _, err := l1.Leaf.Verify(x509.VerifyOptions{DNSName: "api.anthropic.com", Roots: pool}); err != nil {
		t.Errorf("Go rejects the leaf: %v", err)
	}
	evil := forgeLeaf(t, ca, "evil.example.com")
	if _, err := evil.Leaf.Verify(x509.VerifyOptions{DNSName: "evil.example.com", Roots: pool}); err == nil {
		t.Errorf("Go accepts a leaf outside the name constraints")
	}
}

// forgeLeaf mints, with the CA's key, a leaf for a name outside its constraints: what a
// client must refuse even if the key leaked.
func forgeLeaf(t *testing.T, ca *CA, host string) *tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// TestCANameConstraintsRealClients: curl, python3 and node trust a leaf for a bound host
// and refuse one, signed by the same CA, for any other name.
func TestCANameConstraintsRealClients(t *testing.T) {
	dir := t.TempDir()
	ca, err := OpenCA(dir, []string{"api.anthropic.com:443"})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := ca.Leaf("api.anthropic.com")
	evil := forgeLeaf(t, ca, "evil.example.com")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if h.ServerName == "api.anthropic.com" {
			return good, nil
		}
		return evil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello-from-tls")) })}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	clients := realTLSClients(filepath.Join(dir, CACertFile), port)
	for name, mk := range clients {
		if _, err := exec.LookPath(mk("x").Path); err != nil {
			t.Errorf("%s is not installed: %v", name, err)
			continue
		}
		out, err := mk("api.anthropic.com").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "hello-from-tls") {
			t.Errorf("%s refuses the bound host: %v\n%s", name, err, out)
		}
		out, err = mk("evil.example.com").CombinedOutput()
		if err == nil || strings.Contains(string(out), "hello-from-tls") {
			t.Errorf("%s accepts a name outside the CA's constraints:\n%s", name, out)
		} else {
			t.Logf("%s refuses evil.example.com: %s", name, strings.TrimSpace(string(out)))
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// realTLSClients are curl, python3 and node, each making a command that fetches / from
// 127.0.0.1:port over TLS as host, trusting caFile alone.
func realTLSClients(caFile string, port int) map[string]func(host string) *exec.Cmd {
	return map[string]func(host string) *exec.Cmd{
		"curl": func(host string) *exec.Cmd {
			return exec.Command("curl", "-sS", "--max-time", "60", "--cacert", caFile, "--resolve", host+":"+itoa(port)+":127.0.0.1", "https://"+host+":"+itoa(port)+"/")
		},
		"python3": func(host string) *exec.Cmd {
			return exec.Command("python3", "-c", `
import ssl, socket, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
with socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=60) as s:
    with ctx.wrap_socket(s, server_hostname=sys.argv[2]) as t:
        t.sendall(b"GET / HTTP/1.0\r\nHost: " + sys.argv[2].encode() + b"\r\n\r\n")
        print(t.recv(4096).decode(errors="replace"))
`, caFile, host, itoa(port))
		},
		"node": func(host string) *exec.Cmd {
			cmd := exec.Command("node", "-e", `
const https = require("https");
https.get({host: "127.0.0.1", servername: process.argv[1], port: +process.argv[2], path: "/", headers: {host: process.argv[1]}, timeout: 60000}, r => {
  let b = ""; r.on("data", d => b += d); r.on("end", () => console.log(b));
}).on("error", e => { console.error(e.message); process.exit(1); });
`, host, itoa(port))
			cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile)
			return cmd
		},
	}
}

// Two processes of one session bind different hosts (serve with a key, shell with a login):
// the second widens the session's certificate for the same key, and a leaf the first one's
// relay signed (its chain holding the narrower certificate) is trusted by curl, Python and
// Node that trust only the wider one, which the guest now holds. Each process's CA signs only
// for its own hosts; a third that binds nothing new changes nothing.
func TestCAOfTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	first, err := OpenCA(dir, []string{"api.anthropic.com:443"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := first.Leaf("api.anthropic.com")
	if err != nil {
		t.Fatal(err)
	}
	second, err := OpenCA(dir, []string{"chatgpt.com:443", "auth.openai.com:443"})
	if err != nil {
		t.Fatal(err)
	}
	if !second.key.PublicKey.Equal(&first.key.PublicKey) {
		t.Fatal("the second process got a key of its own: the first one's leaves are no longer trusted")
	}
	if want := []string{"api.anthropic.com", "auth.openai.com", "chatgpt.com"}; !slices.Equal(second.cert.PermittedDNSDomains, want) {
		t.Errorf("the second certificate permits %v, want %v", second.cert.PermittedDNSDomains, want)
	}
	if _, err := second.Leaf("api.anthropic.com"); err == nil {
		t.Error("the second process's CA signs for a host only the first binds")
	}
	if _, err := first.Leaf("chatgpt.com"); err == nil {
		t.Error("the first process's CA signs for a host only the second binds")
	}
	third, err := OpenCA(dir, []string{"chatgpt.com:443", "api.anthropic.com:443"})
	if err != nil || !third.Certificate().Equal(second.Certificate()) {
		t.Fatalf("a third process binding nothing new: a new certificate (%v)", err)
	}
	onDisk, _ := os.ReadFile(filepath.Join(dir, CACertFile))
	if string(onDisk) != string(second.CertPEM()) {
		t.Fatal("the certificate the guest is given is not the wider one")
	}

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*leaf}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello-from-tls")) })}
	go srv.Serve(ln)
	defer srv.Close()
	for name, mk := range realTLSClients(filepath.Join(dir, CACertFile), ln.Addr().(*net.TCPAddr).Port) {
		if out, err := mk("api.anthropic.com").CombinedOutput(); err != nil || !strings.Contains(string(out), "hello-from-tls") {
			t.Errorf("%s refuses the first relay's leaf under the wider certificate: %v\n%s", name, err, out)
		}
	}
}
