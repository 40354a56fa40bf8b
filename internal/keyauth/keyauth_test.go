package keyauth

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// handshake runs Prove (the proxy: the connecting end) and Accept (the relay: the listening
// end) over a pipe, each end with its own key;
// through, when not nil, sits between them and sees (and may change) every message.
func handshake(t *testing.T, proxyKey, relayKey []byte, line string, through func(proxy, relay net.Conn)) (proxyErr error, got string, relayErr error) {
	t.Helper()
	proxyEnd, relayEnd := net.Pipe()
	if through != nil {
		a, b := net.Pipe()
		c, d := net.Pipe()
		proxyEnd, relayEnd = a, d
		go through(b, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	proxyEnd.SetDeadline(deadline)
	relayEnd.SetDeadline(deadline)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer relayEnd.Close()
		got, relayErr = Accept(relayEnd, testHello, relayKey)
	}()
	proxyErr = Prove(proxyEnd, testHello, proxyKey, line)
	proxyEnd.Close()
	wg.Wait()
	return proxyErr, got, relayErr
}

const testHello = "TESTHELO"

func mustKey(t *testing.T) []byte {
	t.Helper()
	k, err := ParseKey(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestHandshake(t *testing.T) {
	key := mustKey(t)
	const line = "api.anthropic.com:443"
	perr, got, rerr := handshake(t, key, key, line, nil)
	if perr != nil || rerr != nil || got != line {
		t.Fatalf("same key: proxy %v, relay %v, line %q", perr, rerr, got)
	}
	// A listener without the key (a guest port Lima forwards, another process of the host):
	// the proxy stops before its line, and says why.
	var seen bytes.Buffer
	impostor := func(proxy, relay net.Conn) {
		defer proxy.Close()
		defer relay.Close()
		buf := make([]byte, HelloSize+nonceSize)
		if _, err := io.ReadFull(proxy, buf); err != nil {
			return
		}
		seen.Write(buf)
		proxy.Write(bytes.Repeat([]byte{7}, nonceSize+32))
		rest, _ := io.ReadAll(proxy)
		seen.Write(rest)
	}
	perr, _, _ = handshake(t, key, key, line, impostor)
	if !errors.Is(perr, ErrNotProven) {
		t.Errorf("an impostor relay: the proxy got %v", perr)
	}
	if seen.Len() != HelloSize+nonceSize || bytes.Contains(seen.Bytes(), []byte(line)) {
		t.Errorf("the impostor got %d bytes (%q), want the hello alone", seen.Len(), seen.Bytes())
	}
	// A relay with another key: the same.
	if perr, _, rerr := handshake(t, key, mustKey(t), line, nil); !errors.Is(perr, ErrNotProven) || rerr == nil {
		t.Errorf("another relay key: proxy %v, relay %v", perr, rerr)
	}
	// A client without the key never gets a line served.
	if _, got, rerr := handshake(t, mustKey(t), key, line, nil); rerr == nil || got != "" {
		t.Errorf("a client without the key: relay %v, line %q", rerr, got)
	}
	// A proof made for another use (another hello) is worth nothing here.
	a0, b0 := net.Pipe()
	a0.SetDeadline(time.Now().Add(5 * time.Second))
	b0.SetDeadline(time.Now().Add(5 * time.Second))
	go func() { defer a0.Close(); _ = Prove(a0, "OTHERUSE", key, line) }()
	if got, err := Accept(b0, testHello, key); err == nil {
		t.Errorf("another hello accepted, line %q", got)
	}
	// Nothing on the connection: a probe.
	a, b := net.Pipe()
	a.Close()
	if _, err := Accept(b, testHello, key); !errors.Is(err, ErrProbe) {
		t.Errorf("an empty connection: %v", err)
	}
	for _, bad := range []string{"", "00", NewKey() + "00", "zz" + NewKey()[2:]} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
	if err := Prove(struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(nil), io.Discard}, testHello, key, "a\nb"); err == nil {
		t.Error("a line with a newline was sent")
	}
}

// A generator of attacks on the connection between the proxy and a relay's port (anyone on
// the host, or a guest listener Lima forwards, can be there): each seed changes one message
// one way: a byte flipped, the message cut, one recorded from an earlier connection replayed,
// another line put in place of the proxy's. The relay never serves a line the proxy did not
// prove, and a changed handshake never completes on both ends.
func TestHandshakeTampered(t *testing.T) {
	key := mustKey(t)
	const line = "api.openai.com:443 GET/v1/models"
	// Record one connection's three messages.
	var recorded [3][]byte
	record := func(proxy, relay net.Conn) {
		recorded = relayMITM(proxy, relay, func(int, []byte) []byte { return nil })
	}
	if perr, got, rerr := handshake(t, key, key, line, record); perr != nil || rerr != nil || got != line {
		t.Fatalf("recording: %v %v %q", perr, rerr, got)
	}
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		msg := rng.IntN(3)
		kind := rng.IntN(4)
		changed := false
		tamper := func(i int, b []byte) []byte {
			if i != msg {
				return nil
			}
			switch kind {
			case 0: // flip one bit
				b = bytes.Clone(b)
				b[rng.IntN(len(b))] ^= 1 << rng.IntN(8)
			case 1: // cut
				b = b[:rng.IntN(len(b))]
			case 2: // replay the recorded message
				b = recorded[i]
			case 3: // another line (the proxy's third message: its proof, another line)
				if i == 2 {
					b = append(bytes.Clone(b[:32]), "evil.example:443 GET/*\n"...)
				} else {
					b = bytes.Clone(b)
					b[len(b)-1] ^= 0x80
				}
			}
			changed = true
			return b
		}
		perr, got, rerr := handshake(t, key, key, line, func(proxy, relay net.Conn) { relayMITM(proxy, relay, tamper) })
		if rerr == nil && got != line {
			t.Fatalf("seed %d (message %d, change %d): the relay took %q", seed, msg, kind, got)
		}
		if changed && perr == nil && rerr == nil {
			t.Fatalf("seed %d (message %d, change %d): a changed handshake completed", seed, msg, kind)
		}
	}
}

// relayMITM copies the handshake's three messages between the proxy and the relay, each
// through tamper (nil: as it was), and returns them as they came.
func relayMITM(proxy, relay net.Conn, tamper func(int, []byte) []byte) (msgs [3][]byte) {
	defer proxy.Close()
	defer relay.Close()
	read := func(c net.Conn, n int, line bool) []byte {
		b := make([]byte, n)
		if _, err := io.ReadFull(c, b); err != nil {
			return nil
		}
		if line {
			rest, _ := ReadLine(c)
			b = append(append(b, rest...), '\n')
		}
		return b
	}
	sizes := []struct {
		from, to net.Conn
		n        int
		line     bool
	}{
		{proxy, relay, HelloSize + nonceSize, false},
		{relay, proxy, nonceSize + 32, false},
		{proxy, relay, 32, true},
	}
	for i, s := range sizes {
		b := read(s.from, s.n, s.line)
		if b == nil {
			return
		}
		msgs[i] = b
		cut := false
		if t := tamper(i, b); t != nil {
			b, cut = t, len(t) < len(b)
		}
		if _, err := s.to.Write(b); err != nil || cut {
			return // a message cut short: the connection ends there
		}
	}
	return
}
