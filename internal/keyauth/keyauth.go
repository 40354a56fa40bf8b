// Package keyauth is a handshake in which both ends of a new connection prove that they hold
// one shared key before anything else is said, the listening end first, and the connecting
// end's proof covers the one line it sends: the guest's network proxy and a session's secrets
// relay on the host (netpolicy.RelayHello), and the guest's runner and the host's fast lane to
// it (runnerproto.LaneHello). Each use has a hello of its own, which every proof covers, so a
// proof made for one is worth nothing to the other.
//
//	connecting → listening: hello (8 bytes), nonce P (32 bytes)
//	listening → connecting: nonce R (32 bytes), HMAC-SHA256(key, "listen" hello P R)
//	connecting → listening: HMAC-SHA256(key, "connect" hello P R line), the line, "\n"
//
// A listening end that does not hold the key (a port taken by someone else) gets the hello
// and nothing of the line; a line cannot be changed on the way or replayed on another
// connection. HMAC-SHA256 from the standard library: TLS would need certificates each end
// pins, and give nothing more here (what crosses the connection afterwards is protected, or
// not secret, by what it is).
package keyauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

const (
	// KeySize is the length of a key, in bytes (hex where it is written down).
	KeySize = 32
	// HelloSize is the length of a hello.
	HelloSize = 8
	// MaxLine bounds the line the connecting end sends, its newline included.
	MaxLine   = 16 << 10
	nonceSize = 32
)

// NewKey is a new key, in hex.
func NewKey() string {
	var b [KeySize]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ParseKey reads a key NewKey made.
func ParseKey(s string) ([]byte, error) {
	key, err := hex.DecodeString(s)
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("a key is %d bytes in hex", KeySize)
	}
	return key, nil
}

// ErrProbe: a connection that ended before its first byte (a check that the listener is
// there).
var ErrProbe = errors.New("a connection with nothing on it")

// ErrNotProven: the other end does not hold the key.
var ErrNotProven = errors.New("the other end did not prove that it holds the key")

func mac(key []byte, role, hello string, p, r []byte, line string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(role))
	m.Write([]byte(hello))
	m.Write(p)
	m.Write(r)
	m.Write([]byte(line))
	return m.Sum(nil)
}

func checkHello(hello string) {
	if len(hello) != HelloSize {
		panic("keyauth: a hello is 8 bytes")
	}
}

// Prove is the connecting end's side on c: it returns once the listening end has proved
// itself and the line (without its newline) is sent; the caller bounds the wait with c's
// deadlines. On ErrNotProven nothing of the line was sent.
func Prove(c io.ReadWriter, hello string, key []byte, line string) error {
	checkHello(hello)
	if strings.ContainsRune(line, '\n') || len(line) >= MaxLine {
		return errors.New("the line has a newline or is too long")
	}
	p := make([]byte, nonceSize)
	_, _ = rand.Read(p)
	if _, err := c.Write(append([]byte(hello), p...)); err != nil {
		return err
	}
	answer := make([]byte, nonceSize+sha256.Size)
	if _, err := io.ReadFull(c, answer); err != nil {
		return fmt.Errorf("%w: %v", ErrNotProven, err)
	}
	r, m := answer[:nonceSize], answer[nonceSize:]
	if !hmac.Equal(m, mac(key, "listen", hello, p, r, "")) {
		return ErrNotProven
	}
	out := append(mac(key, "connect", hello, p, r, line), line...)
	_, err := c.Write(append(out, '\n'))
	return err
}

// Accept is the listening end's side on c: it proves itself, then returns the line the
// connecting end sent once that end's proof of it checks out. A connection that ends before
// its first byte is ErrProbe. The caller bounds the wait with c's deadlines.
func Accept(c io.ReadWriter, hello string, key []byte) (string, error) {
	checkHello(hello)
	first := make([]byte, HelloSize+nonceSize)
	if n, err := io.ReadFull(c, first); err != nil {
		if n == 0 {
			return "", ErrProbe
		}
		return "", fmt.Errorf("the connection ended in its hello: %w", err)
	}
	if string(first[:HelloSize]) != hello {
		return "", errors.New("the connection did not open with the expected hello")
	}
	p := first[HelloSize:]
	r := make([]byte, nonceSize)
	_, _ = rand.Read(r)
	if _, err := c.Write(append(r, mac(key, "listen", hello, p, r, "")...)); err != nil {
		return "", err
	}
	m := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, m); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotProven, err)
	}
	line, err := ReadLine(c)
	if err != nil {
		if errors.Is(err, ErrProbe) {
			err = errors.New("the connection ended before its line")
		}
		return "", err
	}
	if !hmac.Equal(m, mac(key, "connect", hello, p, r, line)) {
		return "", ErrNotProven
	}
	return line, nil
}

// ReadLine reads up to the first newline, one byte at a time (what follows is not the
// line's), at most MaxLine bytes. A reader that ends before its first byte is ErrProbe.
func ReadLine(r io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for b.Len() < MaxLine {
		if _, err := io.ReadFull(r, buf); err != nil {
			if b.Len() == 0 {
				return "", ErrProbe
			}
			return "", errors.New("the connection ended before its line")
		}
		if buf[0] == '\n' {
			return b.String(), nil
		}
		b.WriteByte(buf[0])
	}
	return "", fmt.Errorf("a line is longer than %d bytes", MaxLine)
}
