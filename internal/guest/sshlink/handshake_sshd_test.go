package sshlink

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// setHandshakeBounds sets the handshake's bounds for one test.
func setHandshakeBounds(t *testing.T, quiet, max time.Duration) {
	q, m, p := handshakeQuiet, handshakeMax, dropPause
	handshakeQuiet, handshakeMax, dropPause = quiet, max, 50*time.Millisecond
	t.Cleanup(func() { handshakeQuiet, handshakeMax, dropPause = q, m, p })
}

// frontProxy listens on the loopback in front of srv; serve decides what each accepted
// connection (numbered from 0) meets.
func frontProxy(t *testing.T, serve func(n int, c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); serve(n, c) }()
		}
	}()
	return ln.Addr().String()
}

// relay passes c to srv, each chunk from the server held for delay (counted in chunks).
func relay(t *testing.T, srv *sshd.Server, c net.Conn, delay time.Duration, chunks *atomic.Int32) {
	s, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer s.Close()
	go func() { _, _ = io.Copy(s, c); s.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			chunks.Add(1)
			time.Sleep(delay)
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func targetAt(srv *sshd.Server, addr string) *Target {
	return &Target{Name: "handshake-test", Addr: addr, User: srv.User, Signers: []ssh.Signer{srv.ClientSigner}, HostKeyCallback: ssh.FixedHostKey(srv.HostKey)}
}

// A handshake longer than the quiet bound in all, the guest answering within it each time (8
// agents' key exchanges on a 2-vCPU emulated guest): it succeeds. Before, the bound was on the
// whole handshake, and 6 of 8 first calls failed with "i/o timeout".
func TestDialSlowHandshakeThatProgresses(t *testing.T) {
	srv := sshd.Start(t)
	const quiet, delay = 3 * time.Second, time.Second
	setHandshakeBounds(t, quiet, time.Minute)
	var chunks atomic.Int32
	addr := frontProxy(t, func(_ int, c net.Conn) { relay(t, srv, c, delay, &chunks) })
	t0 := time.Now()
	client, err := Dial(context.Background(), targetAt(srv, addr))
	if err != nil {
		t.Fatalf("a slow handshake that makes progress failed: %v", err)
	}
	took := time.Since(t0)
	n := chunks.Load()
	t.Logf("handshake: %d server chunks, each held %s: %s in all (quiet bound %s)", n, delay, took.Round(time.Millisecond), quiet)
	// The test proves something only if the handshake outlasted the quiet bound: counted in the
	// chunks held, not timed.
	if time.Duration(n)*delay <= quiet {
		t.Fatalf("only %d chunks were held %s each: not longer than the quiet bound %s, so this proves nothing", n, delay, quiet)
	}
	// The connection lives on past the bound, with no deadline left on it.
	time.Sleep(quiet + delay)
	s, err := client.NewSession()
	if err != nil {
		t.Fatalf("a session on the connection after the handshake: %v", err)
	}
	out, err := s.Output("echo alive")
	s.Close()
	if err != nil || strings.TrimSpace(string(out)) != "alive" {
		t.Fatalf("a command on the connection after the handshake: %q, %v", out, err)
	}
	client.Close()
}

// A guest that accepts and then says nothing: the handshake ends at the quiet bound, and says so.
func TestDialSilentGuestEndsAtQuietBound(t *testing.T) {
	srv := sshd.Start(t)
	setHandshakeBounds(t, time.Second, time.Minute)
	addr := frontProxy(t, func(_ int, c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	if err := dialBounded(t, targetAt(srv, addr)); err == nil || !strings.Contains(err.Error(), "said nothing for 1s") {
		t.Fatalf("a silent guest: want the quiet bound's error, got %v", err)
	}
}

// A handshake that makes progress but never ends is still bounded by handshakeMax.
func TestDialEndlessHandshakeEndsAtMax(t *testing.T) {
	srv := sshd.Start(t)
	setHandshakeBounds(t, 3*time.Second, 2*time.Second)
	var chunks atomic.Int32
	addr := frontProxy(t, func(_ int, c net.Conn) { relay(t, srv, c, 700*time.Millisecond, &chunks) })
	if err := dialBounded(t, targetAt(srv, addr)); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("a handshake past handshakeMax: want a timeout, got %v", err)
	}
}

// dialBounded is Dial's error, failing the test if Dial does not return within 30 s (far past
// the bounds the tests set: a hang, not a slow machine).
func dialBounded(t *testing.T, tg *Target) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		client, err := Dial(context.Background(), tg)
		if client != nil {
			client.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Dial did not return within 30 s")
		return nil
	}
}

// The guest's sshd closing connections before it says anything (MaxStartups, when several
// processes start at once): Dial connects again and gets through.
func TestDialRetriesConnectionsDroppedBeforeBanner(t *testing.T) {
	srv := sshd.Start(t)
	setHandshakeBounds(t, 10*time.Second, time.Minute)
	var accepted atomic.Int32
	var chunks atomic.Int32
	addr := frontProxy(t, func(n int, c net.Conn) {
		accepted.Add(1)
		if n < 2 {
			return // closed at once, as sshd does past MaxStartups
		}
		relay(t, srv, c, 0, &chunks)
	})
	client, err := Dial(context.Background(), targetAt(srv, addr))
	if err != nil {
		t.Fatalf("two dropped connections, then one that works: %v", err)
	}
	client.Close()
	if n := accepted.Load(); n != 3 {
		t.Errorf("%d connections made, want 3", n)
	}
}

// A refusal after the guest spoke (a key sshd does not accept) is not tried again.
func TestDialDoesNotRetryARefusedLogin(t *testing.T) {
	srv := sshd.Start(t)
	setHandshakeBounds(t, 10*time.Second, time.Minute)
	var accepted atomic.Int32
	var chunks atomic.Int32
	addr := frontProxy(t, func(_ int, c net.Conn) { accepted.Add(1); relay(t, srv, c, 0, &chunks) })
	tg := targetAt(srv, addr)
	tg.User = "nobody-such-user"
	if _, err := Dial(context.Background(), tg); err == nil {
		t.Fatal("a login sshd refuses succeeded")
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("%d connections made for a refused login, want 1", n)
	}
}
