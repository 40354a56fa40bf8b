package netpolicy

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

// The guest's proxy reaches a session's relay on the host two ways. The first is the unix
// socket that sshd listens on in the guest for the relay's process (RelaySocket): each
// connection crosses the guest's sshd, which on an emulated guest costs a new connection
// about ten milliseconds. The second goes straight through the VM's NAT to the port the
// relay listens on at the host's loopback (RelayHost and SecretsSetup.RelayPort), and
// crosses no sshd; the socket stays the fallback.
//
// Anyone can connect to that port: any process of the host, and from the guest any process
// the policy lets reach RelayHost. And a port of the host's loopback can be a guest listener
// that Lima forwards there, which an agent can open. So before anything else each end proves
// that it holds the relay's key (SecretsSetup.RelayKey: made by the relay's process, given to
// root on the set-up's stdin, kept in a file only root reads, never in the agent's reach).
// The relay proves first, so the proxy never sends a line to a listener that is not the
// relay; the proxy's proof covers the line it sends (the target, and the rules the relay
// enforces for a rule target), so a line cannot be changed or replayed on a new connection:
//
//	proxy → relay: RelayHello, nonce P (32 bytes)
//	relay → proxy: nonce R (32 bytes), HMAC-SHA256(key, "relay" P R)
//	proxy → relay: HMAC-SHA256(key, "proxy" P R line), the line, "\n"
//
// After that the connection is the relay's as on the socket. HMAC-SHA256 from the standard
// library: TLS would need a certificate the guest pins and give nothing more here (what
// crosses the connection is the agent's TLS to the bound host, or its HTTP to a rule target).

const (
	// RelayHost is the name the guest reaches the host's loopback by (Lima's).
	RelayHost = "host.lima.internal"
	// RelayHello opens a connection to a relay's port.
	RelayHello = "LMCPRLY1"
	// RelayKeySize is the length of a relay's key, in bytes (hex in SecretsSetup).
	RelayKeySize   = 32
	relayNonceSize = 32
)

// NewRelayKey is a new relay key, in hex.
func NewRelayKey() string {
	var b [RelayKeySize]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ParseRelayKey reads a key NewRelayKey made.
func ParseRelayKey(s string) ([]byte, error) {
	key, err := hex.DecodeString(s)
	if err != nil || len(key) != RelayKeySize {
		return nil, fmt.Errorf("a relay key is %d bytes in hex", RelayKeySize)
	}
	return key, nil
}

// ErrRelayProbe: a connection that ended before its first byte, as the guest's set-up makes
// to learn whether a relay still answers.
var ErrRelayProbe = errors.New("a connection with nothing on it")

// ErrRelayNotProven: the other end does not hold the relay's key.
var ErrRelayNotProven = errors.New("the other end did not prove that it holds the relay's key")

func relayMAC(key []byte, role string, p, r []byte, line string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(role))
	m.Write(p)
	m.Write(r)
	m.Write([]byte(line))
	return m.Sum(nil)
}

// ProveToRelay is the proxy's side of the handshake on c, a new connection to a relay's port:
// it returns once the relay has proved itself and the line (without its newline) is sent;
// the caller bounds the wait with c's deadlines. On ErrRelayNotProven nothing of the line was
// sent.
func ProveToRelay(c io.ReadWriter, key []byte, line string) error {
	if strings.ContainsRune(line, '\n') || len(line) >= MaxRelayLine {
		return errors.New("the relay's line has a newline or is too long")
	}
	p := make([]byte, relayNonceSize)
	_, _ = rand.Read(p)
	if _, err := c.Write(append([]byte(RelayHello), p...)); err != nil {
		return err
	}
	answer := make([]byte, relayNonceSize+sha256.Size)
	if _, err := io.ReadFull(c, answer); err != nil {
		return fmt.Errorf("%w: %v", ErrRelayNotProven, err)
	}
	r, mac := answer[:relayNonceSize], answer[relayNonceSize:]
	if !hmac.Equal(mac, relayMAC(key, "relay", p, r, "")) {
		return ErrRelayNotProven
	}
	out := append(relayMAC(key, "proxy", p, r, line), line...)
	_, err := c.Write(append(out, '\n'))
	return err
}

// ProvenRelayLine is the relay's side of the handshake on c, a connection to its port: it
// proves itself, then returns the line the proxy sent once the proxy's proof of it checks
// out. A connection that ends before its first byte is ErrRelayProbe. The caller bounds the
// wait with c's deadlines.
func ProvenRelayLine(c io.ReadWriter, key []byte) (string, error) {
	hello := make([]byte, len(RelayHello)+relayNonceSize)
	if n, err := io.ReadFull(c, hello); err != nil {
		if n == 0 {
			return "", ErrRelayProbe
		}
		return "", fmt.Errorf("the connection ended in its hello: %w", err)
	}
	if string(hello[:len(RelayHello)]) != RelayHello {
		return "", errors.New("the connection did not open with the relay's hello")
	}
	p := hello[len(RelayHello):]
	r := make([]byte, relayNonceSize)
	_, _ = rand.Read(r)
	if _, err := c.Write(append(r, relayMAC(key, "relay", p, r, "")...)); err != nil {
		return "", err
	}
	mac := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, mac); err != nil {
		return "", fmt.Errorf("%w: %v", ErrRelayNotProven, err)
	}
	line, err := ReadRelayLine(c)
	if err != nil {
		if errors.Is(err, ErrRelayProbe) {
			err = errors.New("the connection ended before the proxy's line")
		}
		return "", err
	}
	if !hmac.Equal(mac, relayMAC(key, "proxy", p, r, line)) {
		return "", ErrRelayNotProven
	}
	return line, nil
}

// ReadRelayLine reads up to the first newline, one byte at a time (what follows is the
// relay's), at most MaxRelayLine bytes. A reader that ends before its first byte is
// ErrRelayProbe.
func ReadRelayLine(r io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for b.Len() < MaxRelayLine {
		if _, err := io.ReadFull(r, buf); err != nil {
			if b.Len() == 0 {
				return "", ErrRelayProbe
			}
			return "", errors.New("the connection ended before the proxy's line")
		}
		if buf[0] == '\n' {
			return b.String(), nil
		}
		b.WriteByte(buf[0])
	}
	return "", fmt.Errorf("the proxy's line is longer than %d bytes", MaxRelayLine)
}
