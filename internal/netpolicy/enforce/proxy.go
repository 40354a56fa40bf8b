package enforce

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

const (
	dialTimeout = 10 * time.Second
	// headTimeout bounds the wait for a request's head.
	headTimeout = 30 * time.Second
	// idleTimeout ends a connection on which nothing moved for this long.
	idleTimeout = 5 * time.Minute
	// maxConnsPerUID caps one agent's connections through the proxy, so that it cannot take
	// every descriptor of the daemon that all sessions share.
	maxConnsPerUID = 256
	// healthPath answers "is the proxy up, and which binary is it" (for a person: see Health).
	healthPath = "/.limactl-mcp/health"
)

// Proxy is the allowlist proxy: one for every agent user of the guest.
type Proxy struct {
	policies *policyStore
	logs     *logBook
	dialer   net.Dialer
	layout   Layout

	mu     sync.Mutex
	active map[int]int // open connections per uid
	// conns are the client connections being served, closed and waited for when Serve ends
	// (nothing writes a log after it returns).
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	// peers are the client connections' owners (uid and socket inode: peercmd.go), looks
	// bounds how often the proxy looks for the command behind one.
	peers map[net.Conn]peer
	looks peerLooks

	// holdFor is how long a refused connection is held while a person watches (hold.go; 0:
	// defaultHoldFor); held is what is held, guarded by heldMu.
	holdFor time.Duration
	heldMu  sync.Mutex
	held    heldBook
}

// NewProxy makes the proxy for a layout (and clears what a proxy before it held: hold.go).
func NewProxy(layout Layout) *Proxy {
	clearHeld(layout)
	return &Proxy{
		policies: newPolicyStore(layout.ConfigDir),
		logs:     newLogBook(layout.LogDir),
		dialer:   net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second},
		active:   map[int]int{},
		layout:   layout,
	}
}

// Health is the proxy's answer on healthPath: for a person's diagnosis only. Nothing acts on
// it: anyone who holds the port could answer it (ensure asks the kernel who holds the port).
type Health struct {
	Exe string `json:"exe"`
}

// Serve answers on every listener until ctx ends or one fails.
func (p *Proxy) Serve(ctx context.Context, listeners []net.Listener) error {
	defer p.logs.close()
	errc := make(chan error, len(listeners))
	for _, ln := range listeners {
		go func(ln net.Listener) { errc <- p.acceptLoop(ln) }(ln)
	}
	var err error
	left := len(listeners)
	select {
	case <-ctx.Done():
	case err = <-errc:
		left--
	}
	for _, ln := range listeners {
		ln.Close()
	}
	for ; left > 0; left-- { // no accept loop adds a connection from here on
		<-errc
	}
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// track registers c as being served; false when Serve is ending.
func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.conns[c] = struct{}{}
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *Proxy) acceptLoop(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors, say: do not spin
			continue
		}
		p.track(c)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.serveConn(c)
		}()
	}
}

// peer is whose a client connection is: its uid (-1 when unknown) and its socket's inode.
type peer struct {
	uid   int
	inode uint32
}

// clientPeer finds whose connection c is, and keeps it for logBlocked until c is served.
func (p *Proxy) clientPeer(c net.Conn) peer {
	client, err1 := netip.ParseAddrPort(c.RemoteAddr().String())
	local, err2 := netip.ParseAddrPort(c.LocalAddr().String())
	if err1 != nil || err2 != nil {
		return peer{uid: -1}
	}
	uid, inode, err := peerUID(client, local)
	if err != nil {
		return peer{uid: -1}
	}
	pe := peer{uid: uid, inode: inode}
	p.mu.Lock()
	if p.peers == nil {
		p.peers = map[net.Conn]peer{}
	}
	p.peers[c] = pe
	p.mu.Unlock()
	return pe
}

// logBlocked logs a refused attempt of the client c, with the command that made it when the
// proxy finds it (peercmd.go).
func (p *Proxy) logBlocked(c net.Conn, user UserPolicy, e netpolicy.Entry) {
	e.Command = p.command(c)
	p.log(user, e)
}

// command is the command line of the process behind the client c ("" when not found, or
// when its uid looked too often this second: peercmd.go).
func (p *Proxy) command(c net.Conn) string {
	p.mu.Lock()
	pe, ok := p.peers[c]
	p.mu.Unlock()
	if !ok || !p.looks.allow(pe.uid) {
		return ""
	}
	return commandOf(pe.uid, pe.inode)
}

func (p *Proxy) acquire(uid int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active[uid] >= maxConnsPerUID {
		return false
	}
	p.active[uid]++
	return true
}

func (p *Proxy) release(uid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active[uid]--; p.active[uid] <= 0 {
		delete(p.active, uid)
	}
}

// serveConn serves one client connection: one request, a CONNECT tunnel or a plain HTTP
// request forwarded with Connection: close (so no later request on it escapes the check).
func (p *Proxy) serveConn(c net.Conn) {
	defer c.Close()
	uid := p.clientPeer(c).uid
	defer func() {
		p.mu.Lock()
		delete(p.peers, c)
		p.mu.Unlock()
	}()
	if uid >= 0 {
		if !p.acquire(uid) {
			writeError(c, 503, "Service Unavailable", "limactl-mcp network proxy: too many connections open for this user\n")
			return
		}
		defer p.release(uid)
	}
	limit := &headLimit{r: c, n: maxHeadBytes}
	br := bufio.NewReaderSize(limit, 16<<10)
	_ = c.SetReadDeadline(time.Now().Add(headTimeout))
	req, err := readRequestHead(br)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			writeError(c, 400, "Bad Request", "limactl-mcp network proxy: "+err.Error()+"\n")
		}
		return
	}
	limit.n = -1
	_ = c.SetReadDeadline(time.Time{})
	if req.Method != "CONNECT" && req.Target == healthPath {
		writeHealth(c)
		return
	}
	user, policy, ok := p.policies.lookup(uid)
	if !ok {
		writeError(c, 403, "Forbidden", fmt.Sprintf("limactl-mcp network proxy: uid %d has no network policy here: refused\n", uid))
		return
	}
	if req.Method == "CONNECT" {
		p.tunnel(c, br, req, user, policy)
		return
	}
	p.forward(c, br, req, user, policy)
}

// writeError answers a request that goes no further, and says why.
func writeError(c net.Conn, code int, status, body string) {
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, status, len(body), body)
}

func writeHealth(c net.Conn) {
	exe, _ := os.Executable()
	body, _ := json.Marshal(Health{Exe: exe})
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}

// splitTarget splits host:port (IPv6 in brackets); without a port, defaultPort (0: required).
func splitTarget(hostport string, defaultPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		if defaultPort == 0 || strings.Contains(strings.Trim(hostport, "[]"), ":") && !strings.HasPrefix(hostport, "[") {
			return "", 0, fmt.Errorf("%q is not host:port", truncate(hostport, 80))
		}
		host, portText = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), strconv.Itoa(defaultPort)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("%q is not host:port", truncate(hostport, 80))
	}
	return host, port, nil
}

// refuse answers 403 with why, and logs the attempt.
func (p *Proxy) refuse(c net.Conn, user UserPolicy, policy netpolicy.Policy, host string, port int) {
	reason, msg := refusal(policy, host, port)
	p.logBlocked(c, user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: reason})
	writeError(c, 403, "Forbidden", msg)
}

// refusal is the reason logged for a refused host:port and the answer the agent reads: what
// the person runs to allow it, live (limactl mcp network INSTANCE allow HOST:PORT).
func refusal(policy netpolicy.Policy, host string, port int) (reason, msg string) {
	target := net.JoinHostPort(host, strconv.Itoa(port))
	ask := fmt.Sprintf("ask the person to allow it: limactl mcp network INSTANCE allow %s", target)
	switch {
	case policy.Mode() == netpolicy.ModeNone:
		return "network policy none", fmt.Sprintf("limactl-mcp network policy none: no host may be reached (%s refused; %s)\n", target, ask)
	case len(policy.RulesFor(host, port)) > 0:
		// Only HTTP rules name it: a tunnel (HTTPS) carries requests the proxy cannot read.
		rules := strings.Join(policy.RulesFor(host, port), ", ")
		return "tunnel under http rules", fmt.Sprintf("limactl-mcp network policy %s: %s is allowed by the rules %s only, and this session's relay does not read its HTTPS (it does for a host name that rules named when the session's agent started: start it again to have each request checked); a tunnel (CONNECT) carries requests the proxy cannot read, so it is refused (%s, without a method or path, to allow every request)\n", policy, target, rules, ask)
	case policy.AllowsSomePort(host):
		return "port not allowed", fmt.Sprintf("limactl-mcp network policy %s: %s is allowed on other ports only (%s)\n", policy, target, ask)
	}
	return "not on the allowlist", fmt.Sprintf("limactl-mcp network policy %s: host %s is not on the allowlist (%s)\n", policy, host, ask)
}

func (p *Proxy) log(user UserPolicy, e netpolicy.Entry) {
	e.Time = time.Now()
	if err := p.logs.write(user.User, e); err != nil {
		fmt.Fprintf(os.Stderr, "limactl-mcp netproxy: writing the log of %s: %v\n", user.User, err)
	}
}

// open connects to host:port for the client c if the policy allows it, or if the person
// watching the agent allows it while the proxy holds c (hold.go); otherwise, or when the
// connection fails, it answers c with why (and logs it) and returns false. reason is what the
// log of the connection says of how it was allowed ("" by the policy).
func (p *Proxy) open(c net.Conn, br *bufio.Reader, user UserPolicy, policy netpolicy.Policy, host string, port int) (upstream net.Conn, reason string, ok bool) {
	if !policy.AllowsPort(host, port) {
		switch out := p.hold(c, br, user, policy, host, port); out {
		case notHeld:
			p.refuse(c, user, policy, host, port)
			return nil, "", false
		case allowedOnce:
			reason = "allowed once by the person"
		case allowedByPolicy:
			reason = "allowed by the person while held"
		case clientHungUp:
			p.logBlocked(c, user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: "held: the client hung up"})
			return nil, "", false
		default:
			why, msg := heldRefusal(out, policy, host, port, p.holdDuration())
			p.logBlocked(c, user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: why})
			writeError(c, 403, "Forbidden", msg)
			return nil, "", false
		}
	}
	upstream, ok = p.connect(c, user, host, port)
	return upstream, reason, ok
}

// connect connects to host:port, allowed already, for the client c; when the connection fails
// it answers c with why (and logs it) and returns false.
func (p *Proxy) connect(c net.Conn, user UserPolicy, host string, port int) (net.Conn, bool) {
	upstream, err := p.dial(host, port)
	if err != nil {
		p.log(user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, Reason: "connect failed: " + err.Error()})
		writeError(c, 502, "Bad Gateway", fmt.Sprintf("limactl-mcp network proxy: %s is allowed, but connecting to it failed: %v\n", host, err))
		return nil, false
	}
	return upstream, true
}

// dial connects to an allowed host; the proxy resolves the name itself (the agent cannot).
func (p *Proxy) dial(host string, port int) (net.Conn, error) {
	return p.dialer.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
}

// tunnel serves CONNECT: check, dial, answer 200, then copy both ways.
func (p *Proxy) tunnel(c net.Conn, br *bufio.Reader, req requestHead, user UserPolicy, policy netpolicy.Policy) {
	host, port, err := splitTarget(req.Target, 0)
	if err != nil {
		writeError(c, 400, "Bad Request", "limactl-mcp network proxy: CONNECT needs host:port: "+err.Error()+"\n")
		return
	}
	if target, ok := boundTarget(user, host, port); ok && policy.Allows(host) {
		// A bound host: to the session's secrets relay on the host (secrets.go), never to the
		// host itself from here.
		p.tunnelToRelay(c, br, user, host, port, target, false, target)
		return
	}
	if line, ok := ruleTarget(user, policy, host, port); ok {
		// A host that method and path rules only name, whose HTTPS the relay reads: it checks
		// each request against the rules given on its line, and names the command behind a
		// request it refuses.
		if user.RelayCommands {
			line.Command = p.command(c)
		}
		p.tunnelToRelay(c, br, user, host, port, line.Target, true, line.String())
		return
	}
	upstream, reason, ok := p.open(c, br, user, policy, host, port)
	if !ok {
		return
	}
	defer upstream.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	up, down := relay(c, br, upstream)
	p.log(user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, BytesUp: up, BytesDown: down, Reason: reason})
}

// tunnelToRelay serves a CONNECT to a bound host, or to a host the rules only name (rule),
// through the newest of the session's relays that takes target (line: what the relay reads
// first, the target and the rules if any): no fallback to the host itself when no relay is
// there (a 502 saying so).
func (p *Proxy) tunnelToRelay(c net.Conn, br *bufio.Reader, user UserPolicy, host string, port int, target string, rule bool, line string) {
	upstream, err := dialRelay(p.layout, user, target, rule, line)
	if err != nil {
		what := "a bound host of the session's secrets"
		if rule {
			what = "named by method and path rules, whose requests the relay reads"
		}
		p.log(user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, Reason: "secrets relay failed: " + err.Error()})
		writeError(c, 502, "Bad Gateway", fmt.Sprintf("limactl-mcp network proxy: %s is %s, but the session's relay on the host could not be reached: %v\n", host, what, err))
		return
	}
	defer upstream.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	up, down := relay(c, br, upstream)
	p.log(user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, BytesUp: up, BytesDown: down})
}

// forward serves a plain HTTP request in absolute form: the head goes upstream in origin form
// without hop-by-hop headers and with Connection: close, the response head comes back the
// same way, and the bodies are copied as they are.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, req requestHead, user UserPolicy, policy netpolicy.Policy) {
	u, err := url.Parse(req.Target)
	if err != nil || !u.IsAbs() || u.Host == "" {
		writeError(c, 400, "Bad Request", "limactl-mcp network proxy: send proxy requests (CONNECT host:port, or an absolute http:// URL)\n")
		return
	}
	if u.Scheme != "http" {
		writeError(c, 400, "Bad Request", fmt.Sprintf("limactl-mcp network proxy: only http:// URLs are forwarded in plain form (%s:// goes through CONNECT)\n", u.Scheme))
		return
	}
	host, port, err := splitTarget(u.Host, 80)
	if err != nil {
		writeError(c, 400, "Bad Request", "limactl-mcp network proxy: "+err.Error()+"\n")
		return
	}
	// An HTTP rule (HOST/PATH:METHODS) lets this one request through: its head and the body
	// its Content-Length gives, nothing else the client sends.
	byRule, bodyLen := false, int64(0)
	if !policy.AllowsPort(host, port) && len(policy.RulesFor(host, port)) > 0 {
		var ok bool
		if byRule, bodyLen, ok = p.checkRequest(c, req, u, user, policy, host, port); !ok {
			return
		}
	}
	var upstream net.Conn
	var ok bool
	reason := ""
	if byRule {
		upstream, ok = p.connect(c, user, host, port)
	} else {
		upstream, reason, ok = p.open(c, br, user, policy, host, port)
	}
	if !ok {
		return
	}
	defer upstream.Close()
	var head strings.Builder
	head.WriteString(req.Method + " " + u.RequestURI() + " HTTP/1.1\r\n")
	header := forwardHeader(req.Header)
	header.Set("Host", u.Host)
	writeHeader(&head, header)
	if _, err := io.WriteString(upstream, head.String()); err != nil {
		p.log(user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, Reason: "request failed: " + err.Error()})
		return
	}
	// The response head is rewritten as the request's was; it comes after whatever body the
	// client sends, so the body is copied meanwhile.
	upstreamReader := bufio.NewReaderSize(&headLimit{r: upstream, n: -1}, 16<<10)
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	upDone := make(chan int64, 1)
	if byRule {
		go func() {
			n, _ := io.CopyN(upstream, br, bodyLen)
			upDone <- n
		}()
	} else {
		go func() { upDone <- pipe(upstream, c, br, &last) }()
	}
	_ = upstream.SetReadDeadline(time.Now().Add(idleTimeout))
	resp, err := readResponseHead(upstreamReader)
	if err != nil {
		writeError(c, 502, "Bad Gateway", fmt.Sprintf("limactl-mcp network proxy: %s is allowed, but its answer was not HTTP: %v\n", host, err))
		c.Close()
		up := <-upDone
		p.log(user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, BytesUp: up, Reason: "bad response: " + err.Error()})
		return
	}
	var out strings.Builder
	out.WriteString(resp.StatusLine + "\r\n")
	writeHeader(&out, forwardHeader(resp.Header))
	down := int64(0)
	if n, err := io.WriteString(c, out.String()); err == nil {
		down = int64(n) + pipe(c, upstream, upstreamReader, &last)
	}
	c.Close()
	up := <-upDone + int64(head.Len())
	p.log(user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, BytesUp: up, BytesDown: down, Reason: reason})
}

// checkRequest decides a plain HTTP request to a host that HTTP rules only name: its path
// must be one the server reads as the proxy does (netpolicy.RequestPath), a rule must allow its
// method and path, and its body must have a length (no chunked body: the proxy forwards that
// many bytes and nothing more). It answers c and logs when it refuses.
func (p *Proxy) checkRequest(c net.Conn, req requestHead, u *url.URL, user UserPolicy, policy netpolicy.Policy, host string, port int) (byRule bool, bodyLen int64, ok bool) {
	rules := strings.Join(policy.RulesFor(host, port), ", ")
	target := net.JoinHostPort(host, strconv.Itoa(port))
	refuse := func(reason, why string) (bool, int64, bool) {
		p.logBlocked(c, user, netpolicy.Entry{Host: host, Port: port, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: reason})
		writeError(c, 403, "Forbidden", fmt.Sprintf("limactl-mcp network policy %s: %s %s: %s (the rules for %s: %s; ask the person to allow it: limactl mcp network INSTANCE allow HOST[:PORT][/PATH][:METHODS])\n",
			policy, req.Method, truncate(u.EscapedPath(), 200), why, target, rules))
		return false, 0, false
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if err := netpolicy.RequestPath(path); err != nil {
		return refuse("request path refused", err.Error())
	}
	allowed, byRule := policy.AllowsRequest(host, port, req.Method, path)
	if !allowed {
		return refuse("method or path not allowed", "no rule allows this method on this path")
	}
	if len(req.Header.Values("Transfer-Encoding")) > 0 {
		return refuse("chunked body under http rules", "a request with a chunked body is not forwarded under a rule (send a Content-Length)")
	}
	if cl := req.Header.Values("Content-Length"); len(cl) > 0 {
		n, err := strconv.ParseInt(cl[0], 10, 64)
		if len(cl) > 1 || err != nil || n < 0 {
			return refuse("bad content-length", "its Content-Length is not one number")
		}
		bodyLen = n
	}
	return byRule, bodyLen, true
}

// relay copies client (after what br holds) to upstream and back until both ends are done,
// and returns the bytes each way.
func relay(client net.Conn, br *bufio.Reader, upstream net.Conn) (up, down int64) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan int64, 1)
	go func() { done <- pipe(upstream, client, br, &last) }()
	down = pipe(client, upstream, upstream, &last)
	return <-done, down
}

// pipe copies from r (reading src's buffered reader, or src itself) to dst until it ends (then
// half-closes dst, so that the other side sees the end) or neither direction moved for
// idleTimeout (last is shared by both), and returns the bytes copied.
func pipe(dst, src net.Conn, r io.Reader, last *atomic.Int64) int64 {
	buf := make([]byte, 32<<10)
	var total int64
	for {
		_ = src.SetReadDeadline(time.Now().Add(idleTimeout))
		n, err := r.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return total
			}
			total += int64(n)
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < idleTimeout {
				continue // this direction is quiet, the other one is not
			}
			if errors.Is(err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
					return total
				}
			}
			// A reset, the idle timeout, or no half-close: end both directions.
			dst.Close()
			src.Close()
			return total
		}
	}
}
