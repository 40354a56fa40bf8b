package guest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// AgentSecrets are an agent's secrets as the connection carries them (docs/secrets.md): what
// the guest gets (Setup: bound hosts, the CA's certificate, placeholders; never a value), and
// the relay that holds the values on this side.
type AgentSecrets struct {
	Setup netpolicy.SecretsSetup
	// Serve relays one connection from the guest's proxy, addressed to target (a bound
	// host:port): secrets.Relay.Serve. It closes c.
	Serve func(ctx context.Context, c net.Conn, target string) error
}

const (
	// maxRelayLine bounds the line the guest's proxy writes first (host:port and a newline).
	maxRelayLine = 300
	// relayLineTimeout bounds the wait for it.
	relayLineTimeout = 30 * time.Second
)

// startRelay asks the guest's sshd, on l's own connection, to listen on the agent's relay
// socket (in the directory `net ensure` made for the Lima user), and relays every connection
// made there until the link ends. The guest's proxy (root) is the only one that can reach it.
func (l *link) startRelay(a *Agent, log *slog.Logger) error {
	ln, err := l.t.ListenUnix(netpolicy.RelaySocket(a.User))
	if err != nil {
		return err
	}
	l.closers = append(l.closers, serveRelay(ln, a.Secrets.Serve, log))
	return nil
}

// serveRelay relays every connection ln accepts with serve, until the function it returns is
// called (which waits for them to end).
func serveRelay(ln net.Listener, serve func(context.Context, net.Conn, string) error, log *slog.Logger) func() {
	return serveEach(ln, 0, nil, func(ctx context.Context, c net.Conn) {
		if err := serveRelayConn(ctx, c, serve); err != nil && ctx.Err() == nil && log != nil {
			log.Warn("secrets relay", "error", err)
		}
	})
}

// serveRelayConn reads the line the proxy wrote (at most maxRelayLine bytes, within
// relayLineTimeout, a bound host:port by its form: the relay checks it against its own set) and
// hands the rest of the connection to serve. An SSH channel has no deadlines, which the relay
// bounds every wait with: it gets one end of a net.Pipe, which has, copied to and from the
// channel (closing either end ends both).
func serveRelayConn(ctx context.Context, ch net.Conn, serve func(context.Context, net.Conn, string) error) error {
	timer := time.AfterFunc(relayLineTimeout, func() { ch.Close() })
	line, err := readRelayLine(ch)
	if !timer.Stop() || err != nil {
		ch.Close()
		if err == nil {
			err = errors.New("the proxy's line came too late")
		}
		return err
	}
	if _, _, err := netpolicy.SplitBoundHost(line); err != nil {
		ch.Close()
		return err
	}
	return serve(ctx, withDeadlines(ch), line)
}

// withDeadlines is ch as a net.Conn whose deadlines work (an SSH channel's do not): one end of
// a net.Pipe, copied to and from ch; closing either end ends both.
func withDeadlines(ch net.Conn) net.Conn {
	inner, outer := net.Pipe()
	go func() {
		_, _ = io.Copy(outer, ch)
		outer.Close()
		ch.Close()
	}()
	go func() {
		_, _ = io.Copy(ch, outer)
		ch.Close()
		outer.Close()
	}()
	return inner
}

// readRelayLine reads up to the first newline, one byte at a time (what follows is the
// relay's).
func readRelayLine(r io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for b.Len() < maxRelayLine {
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", errors.New("the connection ended before the proxy's line")
		}
		if buf[0] == '\n' {
			return b.String(), nil
		}
		b.WriteByte(buf[0])
	}
	return "", errors.New("the proxy's line is longer than 300 bytes")
}
