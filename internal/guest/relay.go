package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/keyauth"
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
// a session has its own, netpolicy.RelaySocketName), and relays every connection made there,
// and every one made to its port on the host (listenRelayPort) that proves itself, until the
// link ends. The guest's proxy (root) is the only one that can reach the socket, and the only
// one in the guest that holds the port's key.
func (l *link) startRelay(a *Agent, log *slog.Logger) error {
	ln, err := l.t.ListenUnix(netpolicy.RelaySocket(a.User, a.Secrets.Setup.Relay))
	if err != nil {
		return err
	}
	l.closers = append(l.closers, serveRelay(ln, a.Secrets, log))
	if l.relayPort != nil {
		l.closers = append(l.closers, serveRelayPort(l.relayPort, l.relayKey, a.Secrets, log))
	}
	return nil
}

// listenRelayPort opens l's relay port, before the set-up that gives its port and key to the
// guest's root (runSetup); startRelay serves it. It ends with the link.
func (l *link) listenRelayPort() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("the secrets relay's port on the host's loopback: %w", err)
	}
	l.relayPort, l.relayKey = ln, keyauth.NewKey()
	l.closers = append(l.closers, func() { ln.Close() })
	return nil
}

// withRelayPort is setup with l's relay port and key, when it has one.
func (l *link) withRelayPort(setup netpolicy.SecretsSetup) netpolicy.SecretsSetup {
	if l.relayPort != nil {
		if addr, ok := l.relayPort.Addr().(*net.TCPAddr); ok {
			setup.RelayPort, setup.RelayKey = addr.Port, l.relayKey
		}
	}
	return setup
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

// maxRelayPortConns bounds the connections the relay's port handles at once: anyone on the
// host can connect there, and only the guest's proxy gets past the handshake.
const maxRelayPortConns = 1024

// serveRelayPort relays every connection ln (a relay port) accepts whose other end proves it
// holds key (netpolicy.ProvenRelayLine, within relayLineTimeout), as serveRelay does.
func serveRelayPort(ln net.Listener, key string, s *AgentSecrets, log *slog.Logger) func() {
	secret, err := keyauth.ParseKey(key)
	if err != nil {
		ln.Close()
		return func() {}
	}
	return serveEach(ln, maxRelayPortConns, nil, func(ctx context.Context, c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(relayLineTimeout))
		line, err := keyauth.Accept(c, netpolicy.RelayHello, secret)
		_ = c.SetDeadline(time.Time{})
		if err == nil {
			err = serveRelayLine(ctx, c, line, s)
		} else {
			c.Close()
			if errors.Is(err, keyauth.ErrProbe) {
				err = nil
			} else {
				err = fmt.Errorf("a connection to the relay's port on the host was refused: %w", err)
			}
		}
		if err != nil && ctx.Err() == nil && log != nil {
			log.Warn("secrets relay", "error", err)
		}
	})
}

// serveRelayConn reads the line the proxy wrote (netpolicy.RelayLine, within relayLineTimeout)
// on a connection to the relay's socket and serves it (serveRelayLine). An SSH channel has no
// deadlines, which the relay bounds every wait with: it gets one end of a net.Pipe, which has,
// copied to and from the channel (closing either end ends both).
func serveRelayConn(ctx context.Context, ch net.Conn, s *AgentSecrets) error {
	timer := time.AfterFunc(relayLineTimeout, func() { ch.Close() })
	line, err := keyauth.ReadLine(ch)
	if !timer.Stop() || err != nil {
		ch.Close()
		if errors.Is(err, keyauth.ErrProbe) {
			return nil // root's set-up asking whether this relay still answers
		}
		if err == nil {
			err = errors.New("the proxy's line came too late")
		}
		return err
	}
	return serveRelayLine(ctx, withDeadlines(ch), line, s)
}

// serveRelayLine hands c to s for line: a bound host:port by its form, or a rule target, its
// rules and perhaps the command behind it (the relay checks the target against its own).
func serveRelayLine(ctx context.Context, c net.Conn, line string, s *AgentSecrets) error {
	rl, err := netpolicy.ParseRelayLine(line)
	if err != nil {
		c.Close()
		return err
	}
	if _, _, err := netpolicy.SplitBoundHost(rl.Target); err != nil {
		c.Close()
		return err
	}
	if len(rl.Rules) == 0 {
		return s.Serve(ctx, c, rl.Target)
	}
	if s.ServeRuled == nil {
		c.Close()
		return errors.New("the proxy asked for a rule target's relay, which this connection does not hold")
	}
	return s.ServeRuled(ctx, c, rl.Target, rl.Rules, rl.Command)
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
