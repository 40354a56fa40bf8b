package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
)

// Secrets under the network policy "open" (docs/secrets.md): no guest proxy and no agent user
// stand between the agent and the network, so the connection brings a proxy of its own. sshd
// listens on a port of the guest's loopback (a tcpip-forward of this connection, as `ssh -R`);
// the agent's HTTPS_PROXY points there. Each CONNECT comes to this side: a bound host's goes to
// the session's relay here (the values never cross into the guest), every other one is opened
// again from the guest (a direct-tcpip channel: sshd dials it, so the guest's network and
// names, never the host's, are what the agent reaches) and passed through as it is.
//
// Not the guest's allowlist proxy (netpolicy/enforce): that one is root's, for agent users, and
// tells sessions apart by the uid of the connection; under open every session is the Lima user,
// so a port per connection is what tells them apart. Not net/http's proxy either: only CONNECT
// is served, byte-exact, with no buffering past the request's head.

const (
	// maxConnectHead bounds a CONNECT request's head (the line and its headers).
	maxConnectHead = 16 << 10
	// connectHeadTimeout bounds the wait for it.
	connectHeadTimeout = 30 * time.Second
	// openProxyDialTimeout bounds the guest's dial of a host that is not bound.
	openProxyDialTimeout = 30 * time.Second
	// maxOpenProxyConns caps the connections served at once (each is goroutines and buffers
	// on the host): beyond it a 503, as the guest proxy's per-agent cap.
	maxOpenProxyConns = 256
)

// openProxy is the proxy of a connection's secrets under open.
type openProxy struct {
	// bound are the secrets' bound host:port, as SecretsSetup.Hosts has them.
	bound map[string]bool
	// serve relays one connection to a bound host (AgentSecrets.Serve).
	serve func(ctx context.Context, c net.Conn, target string) error
	// dial opens a connection from the guest (sshlink.GuestDialer.DialGuest).
	dial func(ctx context.Context, addr string) (io.ReadWriteCloser, error)
	log  *slog.Logger
}

func newOpenProxy(s *AgentSecrets, dial func(context.Context, string) (io.ReadWriteCloser, error), log *slog.Logger) *openProxy {
	p := &openProxy{bound: map[string]bool{}, serve: s.Serve, dial: dial, log: log}
	for _, h := range s.Setup.Hosts {
		p.bound[strings.ToLower(h)] = true
	}
	return p
}

// run serves every connection ln accepts until the function it returns is called (which waits
// for them to end).
func (p *openProxy) run(ln net.Listener) func() {
	full := func(c net.Conn) {
		proxyError(c, 503, "Service Unavailable", fmt.Sprintf("%d connections are open through this proxy already", maxOpenProxyConns))
		c.Close()
	}
	return serveEach(ln, maxOpenProxyConns, full, func(ctx context.Context, c net.Conn) {
		if err := p.serveConn(ctx, c); err != nil && ctx.Err() == nil && p.log != nil {
			p.log.Debug("secrets proxy (open)", "error", err)
		}
	})
}

// serveConn reads one CONNECT and serves it. An SSH channel has no deadlines: the head's wait is
// bounded by closing the channel, and the relay gets it withDeadlines (as serveRelayConn).
func (p *openProxy) serveConn(ctx context.Context, ch net.Conn) error {
	timer := time.AfterFunc(connectHeadTimeout, func() { ch.Close() })
	target, err := readConnectHead(ch)
	if !timer.Stop() {
		ch.Close()
		return errors.New("the request's head came too late")
	}
	if err != nil {
		proxyError(ch, 400, "Bad Request", err.Error())
		ch.Close()
		return err
	}
	if p.bound[target] {
		if _, err := io.WriteString(ch, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			ch.Close()
			return err
		}
		return p.serve(ctx, withDeadlines(ch), target)
	}
	dctx, cancel := context.WithTimeout(ctx, openProxyDialTimeout)
	up, err := p.dial(dctx, target)
	cancel()
	if err != nil {
		proxyError(ch, 502, "Bad Gateway", fmt.Sprintf("the guest could not connect to %s: %v", target, err))
		ch.Close()
		return err
	}
	if _, err := io.WriteString(ch, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		ch.Close()
		up.Close()
		return err
	}
	// Passed through as it is, both ways; either side's end ends both.
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, ch); up.Close(); ch.Close(); done <- struct{}{} }()
	go func() { _, _ = io.Copy(ch, up); ch.Close(); up.Close(); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	ch.Close()
	up.Close()
	<-done
	return nil
}

// proxyError answers a request the proxy does not serve (the text is ours, one line).
func proxyError(w io.Writer, code int, status, msg string) {
	body := "limactl-mcp secrets proxy: " + msg + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, status, len(body), body)
}

// readConnectHead reads a request's head, one byte at a time up to its blank line (what
// follows is the client's TLS), and returns its CONNECT target as a bound host would be
// written: lower case, no trailing dot, with its port.
func readConnectHead(r io.Reader) (string, error) {
	var head []byte
	buf := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) && !bytes.HasSuffix(head, []byte("\n\n")) {
		if len(head) >= maxConnectHead {
			return "", fmt.Errorf("the request's head is longer than %d bytes", maxConnectHead)
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", errors.New("the connection ended before the request's head did")
		}
		head = append(head, buf[0])
	}
	line, _, _ := strings.Cut(string(head), "\n")
	f := strings.Fields(strings.TrimSuffix(line, "\r"))
	if len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/1.") {
		return "", errors.New("not an HTTP/1 request line")
	}
	if f[0] != "CONNECT" {
		return "", fmt.Errorf("only CONNECT (HTTPS) goes through this proxy, not %.20s: plain http:// is not sent here (only HTTPS_PROXY is set)", f[0])
	}
	host, portStr, err := net.SplitHostPort(f[1])
	if err != nil {
		return "", fmt.Errorf("CONNECT %.300s: not host:port", f[1])
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return "", fmt.Errorf("CONNECT %.300s: not a port", f[1])
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || len(host) > 253 || strings.ContainsAny(host, " \t\r\n\x00/@") {
		return "", fmt.Errorf("CONNECT %.300s: not a host", f[1])
	}
	// Compared as it is with the bound hosts (which are names: an IP literal never matches,
	// and is passed through like any host that is not bound).
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}
