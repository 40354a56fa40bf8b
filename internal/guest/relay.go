package guest

import (
	"context"
	"errors"
	"fmt"
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
	// ServeRuled relays one connection addressed to a host that method and path rules only
	// name (Setup.RuleTargets), checking each request against rules, the ones the proxy sent:
	// secrets.Relay.ServeRuled; command is the one behind the connection, as the proxy
	// found it ("": none; the agent's text). It closes c. nil: such connections are refused.
	ServeRuled func(ctx context.Context, c net.Conn, target string, rules []string, command string) error
	// Held are the requests the relay holds now while the person watching decides
	// (secrets.Relay.Held; nil: none are).
	Held func() []netpolicy.HeldConn
}

// relayLineTimeout bounds the wait for the line the guest's proxy writes first
// (netpolicy.RelayLine).
const relayLineTimeout = 30 * time.Second

// startRelay asks the guest's sshd, on l's own connection, to listen on this process's relay
// socket of the agent (in the directory `net ensure` made for the Lima user; each process of
// a session has its own, netpolicy.RelaySocketName), and relays every connection made there
// until the link ends. The guest's proxy (root) is the only one that can reach it.
func (l *link) startRelay(a *Agent, log *slog.Logger) error {
	ln, err := l.t.ListenUnix(netpolicy.RelaySocket(a.User, a.Secrets.Setup.Relay))
	if err != nil {
		return err
	}
	l.closers = append(l.closers, serveRelay(ln, a.Secrets, log))
	return nil
}

// serveRelay relays every connection ln accepts with s, until the function it returns is
// called (which waits for them to end).
func serveRelay(ln net.Listener, s *AgentSecrets, log *slog.Logger) func() {
	return serveEach(ln, 0, nil, func(ctx context.Context, c net.Conn) {
		if err := serveRelayConn(ctx, c, s); err != nil && ctx.Err() == nil && log != nil {
			log.Warn("secrets relay", "error", err)
		}
	})
}

// serveRelayConn reads the line the proxy wrote (netpolicy.RelayLine, within relayLineTimeout):
// a bound host:port by its form, or a rule target, its rules and perhaps the command behind it;
// the relay checks the target against its own) and hands the rest of the connection to s. An SSH channel
// has no deadlines, which the relay bounds every wait with: it gets one end of a net.Pipe,
// which has, copied to and from the channel (closing either end ends both).
func serveRelayConn(ctx context.Context, ch net.Conn, s *AgentSecrets) error {
	timer := time.AfterFunc(relayLineTimeout, func() { ch.Close() })
	line, err := readRelayLine(ch)
	if !timer.Stop() || err != nil {
		ch.Close()
		if errors.Is(err, errProbe) {
			return nil // root's set-up asking whether this relay still answers
		}
		if err == nil {
			err = errors.New("the proxy's line came too late")
		}
		return err
	}
	rl, err := netpolicy.ParseRelayLine(line)
	if err != nil {
		ch.Close()
		return err
	}
	if _, _, err := netpolicy.SplitBoundHost(rl.Target); err != nil {
		ch.Close()
		return err
	}
	if len(rl.Rules) == 0 {
		return s.Serve(ctx, withDeadlines(ch), rl.Target)
	}
	if s.ServeRuled == nil {
		ch.Close()
		return errors.New("the proxy asked for a rule target's relay, which this connection does not hold")
	}
	return s.ServeRuled(ctx, withDeadlines(ch), rl.Target, rl.Rules, rl.Command)
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

// errProbe: a connection that ended before its first byte, as the guest's set-up makes to
// learn which relays still answer (enforce's keptRelays).
var errProbe = errors.New("a connection with nothing on it")

// readRelayLine reads up to the first newline, one byte at a time (what follows is the
// relay's).
func readRelayLine(r io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for b.Len() < netpolicy.MaxRelayLine {
		if _, err := io.ReadFull(r, buf); err != nil {
			if b.Len() == 0 {
				return "", errProbe
			}
			return "", errors.New("the connection ended before the proxy's line")
		}
		if buf[0] == '\n' {
			return b.String(), nil
		}
		b.WriteByte(buf[0])
	}
	return "", fmt.Errorf("the proxy's line is longer than %d bytes", netpolicy.MaxRelayLine)
}
