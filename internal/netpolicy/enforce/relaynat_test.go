package enforce

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/keyauth"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// portRelay is a stand-in for a relay's port on the host (netpolicy/relayauth.go): with the
// key it proves itself and answers the HTTP request in the tunnel with the line it got; an
// impostor (no key) answers the hello with noise. got is everything each connection sent.
type portRelay struct {
	port int
	mu   sync.Mutex
	got  [][]byte
}

func startPortRelay(t *testing.T, key []byte, impostor bool) *portRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &portRelay{port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c, key, impostor)
		}
	}()
	return r
}

func (r *portRelay) serve(c net.Conn, key []byte, impostor bool) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var seen bytes.Buffer
	defer func() { r.mu.Lock(); r.got = append(r.got, seen.Bytes()); r.mu.Unlock() }()
	in := io.TeeReader(c, &seen)
	if impostor {
		hello := make([]byte, keyauth.HelloSize+32)
		if _, err := io.ReadFull(in, hello); err != nil {
			return
		}
		c.Write(bytes.Repeat([]byte{1}, 64))
		io.Copy(io.Discard, in)
		return
	}
	line, err := keyauth.Accept(struct {
		io.Reader
		io.Writer
	}{in, c}, netpolicy.RelayHello, key)
	if err != nil {
		return
	}
	if _, err := http.ReadRequest(bufio.NewReader(in)); err != nil {
		return
	}
	body := "relay port got " + line + "\n"
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}

func (r *portRelay) connections() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.got...)
}

// The proxy reaches a relay at its port on the host when the relays file (root's) gives one
// and the listener there proves it holds the key; else, and for a relay the file does not
// list, at its socket. A listener without the key (a guest port Lima forwards, any process of
// the host) gets the hello and nothing of the line, and the connection still goes through,
// at the socket.
func TestProxyReachesTheRelayAtItsPort(t *testing.T) {
	f := startSecretsFixture(t)
	writePolicy(t, f.layout, UserPolicy{User: "lmcp-test", UID: f.relayUIDAgent(t), Policy: "allow:bound.test,old.test",
		SecretHosts: []string{"bound.test:443", "old.test:443"}, RelayUID: f.relayUID,
		Relays: []RelayEntry{
			{Name: relayOld, Hosts: []string{"bound.test:443", "old.test:443"}},
			{Name: relayNew, Hosts: []string{"bound.test:443"}},
		}})
	f.layout.RelayHost = "127.0.0.1"
	f.restartProxy(t)
	f.startNamedRelay(t, relayOld)
	f.startNamedRelay(t, relayNew)
	keyHex := keyauth.NewKey()
	key, _ := keyauth.ParseKey(keyHex)
	real := startPortRelay(t, key, false)
	setup := &netpolicy.SecretsSetup{Relay: relayNew, RelayPort: real.port, RelayKey: keyHex}
	relays := []RelayEntry{{Name: relayOld}, {Name: relayNew}}
	if err := writeRelayPorts(f.layout, "lmcp-test", relays, setup); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(f.layout.relayPortsFile("lmcp-test")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the relays file: %v %v, want mode 0600", st, err)
	}
	if out := f.getThrough(t, "http://bound.test:443/"); !strings.Contains(out, "relay port got bound.test:443") {
		t.Fatalf("the newer relay has a port: %s", out)
	}
	if out := f.getThrough(t, "http://old.test:443/"); !strings.Contains(out, "relay got old.test:443 by "+relayOld) {
		t.Fatalf("the older relay has none: %s, want its socket", out)
	}

	// The next set-up keeps the port of a kept relay, drops the others'.
	if err := writeRelayPorts(f.layout, "lmcp-test", relays[1:], nil); err != nil {
		t.Fatal(err)
	}
	if ports := readRelayPorts(f.layout, "lmcp-test"); len(ports) != 1 || ports[relayNew].Port != real.port || ports[relayNew].Key != keyHex {
		t.Fatalf("kept %+v", ports)
	}

	// An impostor at the port: the socket carries the connection, the impostor learnt nothing.
	impostor := startPortRelay(t, nil, true)
	setup.RelayPort = impostor.port
	if err := writeRelayPorts(f.layout, "lmcp-test", relays, setup); err != nil {
		t.Fatal(err)
	}
	if out := f.getThrough(t, "http://bound.test:443/"); !strings.Contains(out, "relay got bound.test:443 by "+relayNew) {
		t.Fatalf("an impostor at the port: %s, want the relay's socket", out)
	}
	got := impostor.connections()
	if len(got) != 1 || len(got[0]) != keyauth.HelloSize+32 || bytes.Contains(got[0], []byte("bound.test")) {
		t.Fatalf("the impostor got %q, want one hello", got)
	}
	// Left alone for a while after it failed: the socket at once.
	if out := f.getThrough(t, "http://bound.test:443/"); !strings.Contains(out, "by "+relayNew) || len(impostor.connections()) != 1 {
		t.Fatalf("after the impostor: %s, %d connections to it", out, len(impostor.connections()))
	}

	// A port where nothing listens: the socket.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	setup.RelayPort = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if err := writeRelayPorts(f.layout, "lmcp-test", relays, setup); err != nil {
		t.Fatal(err)
	}
	if out := f.getThrough(t, "http://bound.test:443/"); !strings.Contains(out, "relay got bound.test:443 by "+relayNew) {
		t.Fatalf("no listener at the port: %s", out)
	}

	// A relays file another user could write is not read.
	setup.RelayPort = real.port
	if err := writeRelayPorts(f.layout, "lmcp-test", relays, setup); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.layout.relayPortsFile("lmcp-test"), 0o666); err != nil {
		t.Fatal(err)
	}
	if ports := readRelayPorts(f.layout, "lmcp-test"); ports != nil {
		t.Fatalf("a file others can write was read: %+v", ports)
	}
	// No port left: the file goes.
	if err := writeRelayPorts(f.layout, "lmcp-test", relays, &netpolicy.SecretsSetup{Relay: relayNew}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(f.layout.relayPortsFile("lmcp-test")); !os.IsNotExist(err) {
		t.Fatalf("the relays file with no port: %v", err)
	}
}
