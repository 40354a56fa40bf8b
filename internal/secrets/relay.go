package secrets

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// Defaults of a Relay.
const (
	DefaultMaxHeaderBytes   = 64 << 10
	DefaultIdleTimeout      = 10 * time.Minute
	DefaultHandshakeTimeout = 30 * time.Second
	maxLoggedPath           = 200
)

// ErrNotBound is Serve's answer for a target that is not a bound host: the relay never
// terminates TLS for it (the caller tunnels such a connection itself, opaquely).
var ErrNotBound = errors.New("secrets relay: not a bound host")

// InjectHeaders are the request headers where the relay replaces a placeholder by its value:
// the ones clients put keys in (Authorization: Bearer, token or Basic — Basic decoded,
// replaced and encoded again —, Anthropic's x-api-key, Google's x-goog-api-key, Azure's
// api-key). A placeholder anywhere else (another header, the path, the body) stays a
// placeholder; so does one in the URL query, but for its key= parameter (Gemini's ?key=).
var InjectHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key"}

// Use is one request the relay forwarded to a bound host: what the session log keeps. It
// never holds a value.
type Use struct {
	Time time.Time
	// Host is the bound host:port.
	Host string
	// Secrets are the names of the secrets put into the request (none: it went without).
	Secrets []string
	Method  string
	// Path is the request's path as sent (escaped: what the rules match), without its query,
	// capped.
	Path string
	// Status is the response's status code (0: none came).
	Status int
	// Err says why the request failed, if it did.
	Err string `json:",omitempty"`
	// Rules: the request went to a host that method and path rules only name, and was checked
	// against them (Relay.ServeRuled); Refused: they did not allow it (it never left).
	Rules   bool `json:",omitempty"`
	Refused bool `json:",omitempty"`
	// Once: the rules refused it, and the person watching let it through, that one only
	// (hold.go).
	Once bool `json:",omitempty"`
	// Command is, for a request the rules refused, the command line of the agent's process
	// behind its connection as the guest's proxy found it (ServeRuled; the agent's text, at
	// most netpolicy.MaxEntryCommand bytes).
	Command string `json:",omitempty"`
}

// Recorder takes every Use. It must not block for long (the request waits for it).
type Recorder interface {
	Record(Use)
}

// Relay is a session's injecting relay. Its zero value is not usable: Set and CA are needed.
type Relay struct {
	Set *Set
	CA  *CA
	// Recorder takes the log of uses (nil: none).
	Recorder Recorder
	// RuleTargets are the host:port, named by method and path rules only, whose HTTPS the
	// relay terminates to check each request (ServeRuled); the CA signs their names too.
	RuleTargets []string
	// Dial reaches a bound host:port (default: a net.Dialer; tests point it at a fake
	// provider).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs verify the bound hosts (nil: the host's roots; tests add the fake provider's
	// CA).
	RootCAs *x509.CertPool
	// MaxHeaderBytes caps a request's header (default DefaultMaxHeaderBytes).
	MaxHeaderBytes int
	// IdleTimeout bounds every wait for a byte from either side, and every write (default
	// DefaultIdleTimeout: a model may think for minutes before its first byte).
	IdleTimeout time.Duration
	// HandshakeTimeout bounds each TLS handshake and the dial (default
	// DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// HoldDir is the session's host state directory, where a request the rules refuse is
	// held while a person watches (hold.go; "": never held, refused at once). HoldFor bounds
	// the wait (default DefaultHoldFor).
	HoldDir string
	HoldFor time.Duration

	holding holding
	pool    upstreamPool
	tickets sessionTickets
}

// Serve relays one connection from the guest side, already addressed to target (host:port),
// until either side ends it, and closes it. For a target that is not a bound host it returns
// ErrNotBound at once, without reading or writing a byte. For a bound host it terminates TLS
// with the CA's leaf (HTTP/1.1 only), puts each bound secret's value in place of its
// placeholder in InjectHeaders and key=, and forwards each request to the real host over TLS
// verified with RootCAs. A failure never sends anything towards the guest but an error
// response: never a value.
func (r *Relay) Serve(ctx context.Context, conn net.Conn, target string) error {
	defer conn.Close()
	target = strings.ToLower(target)
	host, port, err := net.SplitHostPort(target)
	if err != nil || r.Set == nil || r.CA == nil || !r.Set.Bound(target) {
		return ErrNotBound
	}
	return (&session{relay: r, target: target, host: host, port: port, secrets: r.Set.For(target), logins: r.Set.loginsFor(target)}).run(ctx, conn)
}

// ServeRuled relays one connection from the guest's proxy to target, a host:port that the
// session's method and path rules only name (netpolicy.Policy.RuleTargets), with rules, the
// canonical rules the proxy holds for it now: it terminates TLS with the CA's leaf as Serve
// does, lets through each request that a rule allows (its method, and its path as sent,
// checked as the proxy checks a plain request's: netpolicy.RequestPath), and answers every
// other one 403 without sending it on. Nothing is injected; an upgrade (a WebSocket) is
// refused, since what it carries could not be read. ErrNotBound: target is not one of
// RuleTargets, or rules are not rules for it.
//
// command is the command line of the agent's process behind the connection, as the guest's
// proxy found it ("": none; the agent's text, dropped when longer than
// netpolicy.MaxEntryCommand or not UTF-8): a request the rules refuse or hold is logged and
// listed with it (Use.Command, HeldRequest.Command), so that `watch` names it.
func (r *Relay) ServeRuled(ctx context.Context, conn net.Conn, target string, rules []string, command string) error {
	defer conn.Close()
	if len(command) > netpolicy.MaxEntryCommand || !utf8.ValidString(command) {
		command = ""
	}
	target = strings.ToLower(target)
	host, port, err := net.SplitHostPort(target)
	if err != nil || r.CA == nil || !slices.Contains(r.RuleTargets, target) {
		return ErrNotBound
	}
	pol, err := netpolicy.RulesPolicy(rules)
	portNum, _ := strconv.Atoi(port)
	if err != nil || len(pol.RulesFor(host, portNum)) == 0 {
		return fmt.Errorf("%w: the rules for %s are not rules for it (%v)", ErrNotBound, target, err)
	}
	return (&session{relay: r, target: target, host: host, port: port, rules: &pol, portNum: portNum, command: command}).run(ctx, conn)
}

// run serves conn as c until either side ends it or ctx is done (which closes both sides).
// A clean connection to the provider goes back to the relay's pool.
func (c *session) run(ctx context.Context, conn net.Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		conn.Close()
		c.closeUp()
	})
	err := c.serve(ctx, conn)
	if stop() && c.upClean && c.up != nil && c.upR.Buffered() == 0 {
		c.relay.pool.put(c.target, upConn{c.up, c.upDC})
		return err
	}
	c.closeUp()
	return err
}

func (r *Relay) idle() time.Duration {
	if r.IdleTimeout > 0 {
		return r.IdleTimeout
	}
	return DefaultIdleTimeout
}

func (r *Relay) handshakeTimeout() time.Duration {
	if r.HandshakeTimeout > 0 {
		return r.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}

func (r *Relay) maxHeader() int {
	if r.MaxHeaderBytes > 0 {
		return r.MaxHeaderBytes
	}
	return DefaultMaxHeaderBytes
}

func (r *Relay) record(u Use) {
	if r.Recorder != nil {
		r.Recorder.Record(u)
	}
}

// session is one guest connection.
type session struct {
	relay      *Relay
	target     string
	host, port string
	secrets    []Secret
	// logins are the agents' logins the target takes part in (login.go).
	logins []*Login
	// rules, when set, decide each request (ServeRuled); portNum is port's number.
	rules   *netpolicy.Policy
	portNum int
	// command is the one behind the connection (ServeRuled), logged with a refusal.
	command string
	up      *tls.Conn
	upDC    *deadlineConn
	// upClean: the last response on up was read to its end and the provider keeps the
	// connection: it goes back to the relay's pool when the guest is done.
	upClean bool
	upMu    sync.Mutex // up, against closeUp at the context's end
	// early is the upstream connection dialled while the guest's handshake goes on (Serve:
	// a bound host), taken by the first request's dialUp; nil once taken or never started.
	early     chan earlyUp
	upR       *bufio.Reader
	upW       *bufio.Writer
	clientW   *bufio.Writer
	clientTLS *tls.Conn
}

func (c *session) closeUp() {
	c.upMu.Lock()
	defer c.upMu.Unlock()
	if c.up != nil {
		c.up.Close()
	}
}

// setUp makes u the session's connection to the provider.
func (c *session) setUp(u upConn) {
	c.upMu.Lock()
	defer c.upMu.Unlock()
	c.up, c.upDC = u.conn, u.dc
	c.upR, c.upW = bufio.NewReaderSize(u.conn, 32<<10), bufio.NewWriterSize(u.conn, 32<<10)
}

func (c *session) serve(ctx context.Context, conn net.Conn) error {
	r := c.relay
	leaf, err := r.CA.Leaf(c.host)
	if err != nil {
		return err
	}
	if c.rules == nil {
		// A bound host: its connection is taken from the pool or dialled beside the guest's
		// handshake, as an opaque tunnel's is, so that the first request does not wait for a
		// second handshake (a request under rules may be held or refused: its connection is
		// taken when it goes).
		// Beside it too: the check of a kept connection (liveCheck), which would delay the
		// handshake's start by as much.
		c.early = make(chan earlyUp, 1)
		go func() {
			if u, ok := r.pool.get(c.target); ok {
				c.early <- earlyUp{u, nil, time.Now()} // kept from a guest connection before
				return
			}
			up, err := c.dialTLS(ctx)
			c.early <- earlyUp{up, err, time.Now()}
		}()
		defer func() {
			if c.early != nil { // never taken: closed once it is there
				go func(ch chan earlyUp) {
					if e := <-ch; e.err == nil {
						e.up.conn.Close()
					}
				}(c.early)
			}
		}()
	}
	cr := &limitReader{}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" && !strings.EqualFold(hello.ServerName, c.host) {
				return nil, fmt.Errorf("secrets relay: the client asked for %q on a connection to %s", hello.ServerName, c.host)
			}
			return leaf, nil
		},
	}
	r.tickets.use(cfg)
	tc := tls.Server(&deadlineConn{Conn: conn, idle: r.idle()}, cfg)
	hctx, hcancel := context.WithTimeout(ctx, r.handshakeTimeout())
	err = tc.HandshakeContext(hctx)
	hcancel()
	if err != nil {
		err = fmt.Errorf("secrets relay: TLS with the guest for %s: %w", c.host, err)
		// crypto/tls gives a received alert as an unexported type: its text is what there is.
		if msg := err.Error(); strings.Contains(msg, "remote error: tls: bad certificate") || strings.Contains(msg, "remote error: tls: unknown certificate authority") {
			err = fmt.Errorf("%w: the client in the guest does not trust the session CA (%s); it needs it in the system store or in the variable it reads (%s, %s)", err, CACertFile, netpolicy.NodeCAVariable, strings.Join(netpolicy.CABundleVariables, ", "))
			r.record(Use{Time: time.Now(), Host: c.target, Err: "the client does not trust the session CA"})
		}
		return err
	}
	c.clientTLS = tc
	cr.r = tc
	br := bufio.NewReaderSize(cr, 16<<10)
	c.clientW = bufio.NewWriterSize(tc, 16<<10)
	for {
		cr.remain = int64(r.maxHeader())
		req, err := http.ReadRequest(br)
		if err != nil {
			if errors.Is(err, io.EOF) && cr.remain > 0 && br.Buffered() == 0 {
				return nil // the client is done
			}
			if cr.remain <= 0 {
				c.refuse(http.StatusRequestHeaderFieldsTooLarge, "the request's header is larger than %d bytes", r.maxHeader())
				return errors.New("secrets relay: a request header too large")
			}
			c.refuse(http.StatusBadRequest, "not an HTTP/1.1 request: %v", err)
			return fmt.Errorf("secrets relay: reading a request: %w", err)
		}
		cr.remain = -1
		keep, err := c.roundTrip(ctx, req, br)
		if err != nil || !keep {
			return err
		}
	}
}

// refuse answers the guest with an error of the relay and no keep-alive.
func (c *session) refuse(code int, format string, args ...any) {
	msg := "limactl-mcp secrets relay: " + fmt.Sprintf(format, args...) + "\n"
	fmt.Fprintf(c.clientW, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), len(msg), msg)
	c.clientW.Flush()
}

// maxRefusedBody is how much of a refused request's body the relay reads and drops.
const maxRefusedBody = 32 << 20

// drainRefused reads and drops the body of a request the rules refused, before the answer,
// up to maxRefusedBody: a client that writes its whole body before it reads (npm's publish, a
// PUT of a few MB) then reads the refusal, where a connection closed under its write would be
// a network error it retries for a minute. Nothing of it goes anywhere. A client that waits
// for 100 Continue sends no body; each read is bounded by the connection's idle deadline.
func drainRefused(req *http.Request) {
	if req.Body == nil || req.Body == http.NoBody || strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		return
	}
	_, _ = io.CopyN(io.Discard, req.Body, maxRefusedBody)
}

// roundTrip forwards one request and its response; keep says whether the connection goes on.
func (c *session) roundTrip(ctx context.Context, req *http.Request, clientR *bufio.Reader) (keep bool, err error) {
	use := Use{Time: time.Now(), Host: c.target, Method: req.Method, Path: capPath(req.URL.EscapedPath())}
	fail := func(code int, format string, args ...any) (bool, error) {
		msg := fmt.Sprintf(format, args...)
		use.Err = msg
		c.relay.record(use)
		c.refuse(code, "%s", msg)
		return false, errors.New("secrets relay: " + msg)
	}
	switch {
	case req.ProtoMajor != 1:
		return fail(http.StatusHTTPVersionNotSupported, "only HTTP/1.x is relayed (got %s)", req.Proto)
	case req.Method == http.MethodConnect:
		return fail(http.StatusMethodNotAllowed, "CONNECT inside a relayed connection")
	case req.URL.IsAbs() || req.URL.Host != "" || !strings.HasPrefix(req.RequestURI, "/"):
		return fail(http.StatusBadRequest, "the request target must be a path (got %q)", capPath(req.RequestURI))
	case !c.sameHost(req.Host):
		return fail(http.StatusMisdirectedRequest, "Host %q on a connection to %s", capPath(req.Host), c.host)
	}
	if c.rules != nil {
		use.Rules = true
		if why := c.checkRules(req); why != "" {
			use.Command = c.command
			ask := "limactl mcp network INSTANCE allow HOST[:PORT][/PATH][:METHODS]"
			rule, err := netpolicy.ExactRule(c.host, c.portNum, req.Method, req.URL.EscapedPath())
			if err == nil {
				ask = "limactl mcp network INSTANCE allow " + rule + ", or the a key of limactl mcp watch INSTANCE, which lists it"
				// A request a person could allow as it is waits for them while they watch.
				switch out := c.relay.hold(ctx, c.target, req.Method, req.URL.EscapedPath(), c.command); out {
				case allowedOnce:
					use.Once = true
				case holdEnded:
					return false, ctx.Err()
				default:
					if r := out.refusal(c.relay.holdFor()); r != "" {
						why += "; " + r
					}
				}
			}
			if !use.Once {
				// The policy at work, not a failure: answered, logged, the connection ended
				// (its body read and dropped), and no error for the caller to report.
				use.Refused = true
				drainRefused(req)
				_, _ = fail(http.StatusForbidden, "network policy: %s %s to %s: %s (the rules for it: %s; ask the person to allow it: %s)",
					req.Method, capPath(req.URL.EscapedPath()), c.target, why, strings.Join(c.rules.RulesFor(c.host, c.portNum), ", "), ask)
				return false, nil
			}
		}
	}
	injected := inject(req, c.secrets)
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// The relay answers it, before anything reads the body (a login's token request is
		// read whole here): the body is read from the guest only as it is sent on.
		req.Header.Del("Expect")
		io.WriteString(c.clientW, "HTTP/1.1 100 Continue\r\n\r\n")
		if err := c.clientW.Flush(); err != nil {
			return false, err
		}
	}
	// The logins' tokens are the host file's now (another process, or the person's agent on
	// the host, may have refreshed them).
	var refreshed *Login
	var loginTokensNow []loginTokens
	for _, l := range c.logins {
		t, err := l.current()
		if err != nil {
			return fail(http.StatusBadGateway, "%s: %v", l.Kind.Name, err)
		}
		loginTokensNow = append(loginTokensNow, t)
		if l.inject(req, t) {
			injected = append(injected, l.Kind.Name)
		}
		if l.isRefresh(c.target, req) {
			swapped, err := l.swapRefresh(req, t)
			if err != nil {
				return fail(http.StatusBadRequest, "%s: %v", l.Kind.Name, err)
			}
			if swapped {
				refreshed = l
				injected = append(injected, l.Kind.Name)
			}
		}
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // else req.Write adds Go's
	}
	upgrade := req.Header.Get("Upgrade") != "" && headerHasToken(req.Header, "Connection", "upgrade")
	// The guest ending its connection after this request (Connection: close) is not the
	// provider's connection ending: that one may serve the session's next guest connection
	// (upstreampool.go).
	guestClose := req.Close
	req.Close = false
	dropToken(req.Header, "Connection", "close")
	if err := c.dialUp(ctx); err != nil {
		return fail(http.StatusBadGateway, "%s: %v", c.target, err)
	}
	c.upClean = false      // until this round trip is over
	use.Secrets = injected // from here on the values may have left
	if req.Body != nil && req.Body != http.NoBody {
		// net/http sends the header before reading the body; this sends each piece of a
		// body that comes slowly as it comes, not when 32 KiB have gathered.
		req.Body = &flushFirst{ReadCloser: req.Body, w: c.upW}
	}
	wrote := make(chan error, 1)
	go func() {
		err := req.Write(c.upW)
		if err == nil {
			err = c.upW.Flush()
		}
		wrote <- err
	}()
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(c.upR, req)
		if err != nil {
			keep, ferr := fail(http.StatusBadGateway, "%s: reading the response: %v", c.target, err)
			c.abort(wrote)
			return keep, ferr
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			c.writeHead(resp, nil)
			if err := c.clientW.Flush(); err != nil {
				c.abort(wrote)
				return false, err
			}
			continue
		}
		break
	}
	use.Status = resp.StatusCode
	// Whether the provider keeps its connection (a body that ends with the connection is
	// one it does not: net/http says Close then); the guest's answer says it ends the guest's.
	upKeeps := !resp.Close
	if guestClose {
		resp.Close = true
	}
	if refreshed != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		// The answer to a refresh: its tokens stay on the host (login.go).
		body, err := refreshed.takeTokens(resp)
		resp.Body.Close()
		if err != nil {
			keep, ferr := fail(http.StatusBadGateway, "%s: %v", refreshed.Kind.Name, err)
			c.abort(wrote)
			return keep, ferr
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.TransferEncoding = nil
		resp.Header.Del("Content-Encoding")
	}
	c.relay.record(use)
	scrub := newScrubber(c.secrets)
	for _, t := range loginTokensNow {
		scrub.addMasked(t.all()...)
	}
	for k, vs := range resp.Header {
		for i, v := range vs {
			resp.Header[k][i] = scrub.replace(v)
		}
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if !upgrade {
			c.abort(wrote)
			return false, errors.New("secrets relay: 101 to a request that asked for no upgrade")
		}
		c.writeHead(resp, nil)
		if err := c.clientW.Flush(); err != nil {
			return false, err
		}
		if err := <-wrote; err != nil {
			return false, err
		}
		return false, c.tunnel(clientR, c.upR)
	}
	body := &scrubReader{r: resp.Body, s: scrub}
	err = c.writeResponse(req, resp, body)
	resp.Body.Close()
	werr := <-wrote
	if err != nil {
		return false, err
	}
	if werr != nil {
		return false, fmt.Errorf("secrets relay: sending the request to %s: %w", c.target, werr)
	}
	c.upClean = upKeeps
	return upKeeps && !guestClose, nil
}

// dropToken removes token from the comma-separated values of h[key] (the key goes when none
// is left).
func dropToken(h http.Header, key, token string) {
	var kept []string
	for _, v := range h[key] {
		var parts []string
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" && !strings.EqualFold(t, token) {
				parts = append(parts, t)
			}
		}
		if len(parts) > 0 {
			kept = append(kept, strings.Join(parts, ", "))
		}
	}
	if len(kept) == 0 {
		h.Del(key)
	} else {
		h[key] = kept
	}
}

// checkRules says why the session's rules refuse req ("": they allow it). The path is the one
// sent, escaped, checked as the guest's proxy checks a plain request's; the query is not part
// of it. An upgrade is refused: what it carries afterwards could not be read.
func (c *session) checkRules(req *http.Request) string {
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	if err := netpolicy.RequestPath(path); err != nil {
		return err.Error()
	}
	if req.Header.Get("Upgrade") != "" {
		return "an upgrade (a WebSocket) carries what the relay cannot check, so it is refused under rules"
	}
	if allowed, _ := c.rules.AllowsRequest(c.host, c.portNum, req.Method, path); !allowed {
		return "no rule allows this method on this path"
	}
	return ""
}

// abort ends both sides of a round trip that went wrong, and waits for its request's writer
// (which may be reading the guest's body, or writing to the provider).
func (c *session) abort(wrote <-chan error) {
	c.up.Close()
	c.clientTLS.Close()
	<-wrote
}

func (c *session) sameHost(h string) bool {
	h = strings.ToLower(h)
	return h == c.host || h == c.host+":"+c.port
}

// earlyUp is the result of the early dial.
type earlyUp struct {
	up  upConn
	err error
	at  time.Time
}

// maxEarlyAge is how long an early connection may wait for the first request: a provider may
// close one idle for longer (then the first request dials its own).
const maxEarlyAge = 20 * time.Second

func (c *session) dialUp(ctx context.Context) error {
	if c.up != nil {
		return nil
	}
	var up upConn
	var err error
	if c.early != nil {
		e := <-c.early
		c.early = nil
		up, err = e.up, e.err
		if err == nil && time.Since(e.at) > maxEarlyAge {
			up.conn.Close()
			up, err = c.dialTLS(ctx)
		}
	} else if u, ok := c.relay.pool.get(c.target); ok {
		up = u // kept from a guest connection before
	} else {
		up, err = c.dialTLS(ctx)
	}
	if err != nil {
		return err
	}
	c.setUp(up)
	return nil
}

// dialTLS dials the target and does TLS with it, verified with RootCAs.
func (c *session) dialTLS(ctx context.Context) (upConn, error) {
	r := c.relay
	dctx, cancel := context.WithTimeout(ctx, r.handshakeTimeout())
	defer cancel()
	dial := r.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	raw, err := dial(dctx, "tcp", c.target)
	if err != nil {
		return upConn{}, err
	}
	dc := &deadlineConn{Conn: raw, idle: r.idle()}
	up := tls.Client(dc, &tls.Config{
		ServerName: c.host,
		RootCAs:    r.RootCAs,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	if err := up.HandshakeContext(dctx); err != nil {
		raw.Close()
		return upConn{}, err
	}
	return upConn{up, dc}, nil
}

// writeHead writes the status line and the header (with the extra lines).
func (c *session) writeHead(resp *http.Response, extra []string) {
	status := resp.Status
	if status == "" {
		status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	}
	io.WriteString(c.clientW, "HTTP/1.1 "+status+"\r\n")
	resp.Header.Write(c.clientW)
	for _, l := range extra {
		io.WriteString(c.clientW, l+"\r\n")
	}
	io.WriteString(c.clientW, "\r\n")
}

// writeResponse writes resp to the guest, framed as it came (a length, chunked, or until the
// end), flushing as the upstream's bytes come so that a stream (SSE) stays one.
func (c *session) writeResponse(req *http.Request, resp *http.Response, body io.Reader) error {
	resp.Header.Del("Content-Length")
	resp.Header.Del("Transfer-Encoding")
	noBody := req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[len(resp.TransferEncoding)-1] == "chunked"
	var extra []string
	switch {
	case chunked && !noBody:
		extra = append(extra, "Transfer-Encoding: chunked")
	case resp.ContentLength >= 0:
		extra = append(extra, "Content-Length: "+strconv.FormatInt(resp.ContentLength, 10))
	case !noBody:
		resp.Close = true // the body ends when the connection does
	}
	if resp.Close && !headerHasToken(resp.Header, "Connection", "close") {
		extra = append(extra, "Connection: close")
	}
	c.writeHead(resp, extra)
	if err := c.clientW.Flush(); err != nil {
		return err
	}
	if noBody {
		return nil
	}
	buf := make([]byte, 32<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if chunked {
				fmt.Fprintf(c.clientW, "%x\r\n", n)
			}
			c.clientW.Write(buf[:n])
			if chunked {
				io.WriteString(c.clientW, "\r\n")
			}
			if err := c.clientW.Flush(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("secrets relay: the response of %s: %w", c.target, rerr)
		}
	}
	if chunked {
		io.WriteString(c.clientW, "0\r\n\r\n")
	}
	return c.clientW.Flush()
}

// tunnel copies both ways, opaquely, after an upgrade (a websocket), until either side ends.
func (c *session) tunnel(clientR, upR *bufio.Reader) error {
	done := make(chan error, 2)
	go func() {
		_, err := io.Copy(c.up, clientR)
		c.up.CloseWrite()
		done <- err
	}()
	go func() {
		_, err := io.Copy(c.clientTLS, upR)
		c.clientTLS.CloseWrite()
		done <- err
	}()
	err := <-done
	c.clientTLS.Close()
	c.up.Close()
	<-done
	return err
}

// inject replaces the placeholders of secrets by their values in InjectHeaders and key=, and
// returns the names of the secrets it put in.
func inject(req *http.Request, secrets []Secret) []string {
	var used []string
	mark := func(s Secret) {
		for _, n := range used {
			if n == s.Name {
				return
			}
		}
		used = append(used, s.Name)
	}
	swap := func(v string, enc func(string) string) string {
		for _, s := range secrets {
			if strings.Contains(v, s.Placeholder) {
				v = strings.ReplaceAll(v, s.Placeholder, enc(s.Value))
				mark(s)
			}
		}
		return v
	}
	same := func(s string) string { return s }
	for _, k := range InjectHeaders {
		for i, v := range req.Header[k] {
			if k == "Authorization" {
				if scheme, cred, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Basic") {
					if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
						if nv := swap(string(dec), same); nv != string(dec) {
							req.Header[k][i] = scheme + " " + base64.StdEncoding.EncodeToString([]byte(nv))
						}
						continue
					}
				}
			}
			req.Header[k][i] = swap(v, same)
		}
	}
	if req.URL.RawQuery != "" {
		parts := strings.Split(req.URL.RawQuery, "&")
		for i, p := range parts {
			if name, val, ok := strings.Cut(p, "="); ok && name == "key" {
				parts[i] = name + "=" + swap(val, url.QueryEscape)
			}
		}
		req.URL.RawQuery = strings.Join(parts, "&")
	}
	return used
}

func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h[key] {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func capPath(p string) string {
	if len(p) > maxLoggedPath {
		return p[:maxLoggedPath] + "…"
	}
	return p
}

// flushFirst flushes w before each read of the body it wraps.
type flushFirst struct {
	io.ReadCloser
	w *bufio.Writer
}

func (f *flushFirst) Read(p []byte) (int, error) {
	if err := f.w.Flush(); err != nil {
		return 0, err
	}
	return f.ReadCloser.Read(p)
}

// limitReader caps the bytes read while remain >= 0 (a request's header), like net/http's
// server does; remain < 0 lets everything through (a body).
type limitReader struct {
	r      io.Reader
	remain int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.remain < 0 {
		return l.r.Read(p)
	}
	if l.remain == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.remain {
		p = p[:l.remain]
	}
	n, err := l.r.Read(p)
	l.remain -= int64(n)
	return n, err
}

// deadlineConn bounds every read and write by idle; a read by readBy when it is set (the
// upstream pool's check of a kept connection).
type deadlineConn struct {
	net.Conn
	idle   time.Duration
	readBy time.Time
}

func (d *deadlineConn) Read(p []byte) (int, error) {
	if !d.readBy.IsZero() {
		d.Conn.SetReadDeadline(d.readBy)
	} else {
		d.Conn.SetReadDeadline(time.Now().Add(d.idle))
	}
	return d.Conn.Read(p)
}

func (d *deadlineConn) Write(p []byte) (int, error) {
	d.Conn.SetWriteDeadline(time.Now().Add(d.idle))
	return d.Conn.Write(p)
}

// echoMask is what replaces a value echoed by a bound host: its placeholder cut or padded with
// '*' to the value's length, so that a body keeps its Content-Length and streams as it came.
func echoMask(s Secret) string {
	if len(s.Placeholder) >= len(s.Value) {
		return s.Placeholder[:len(s.Value)]
	}
	return s.Placeholder + strings.Repeat("*", len(s.Value)-len(s.Placeholder))
}

// scrubber puts a placeholder back in place of its value in what a bound host answers, should
// it echo one (headers, and bodies as sent: a compressed echo is not seen).
type scrubber struct {
	pairs [][2][]byte // value, placeholder
}

func newScrubber(secrets []Secret) *scrubber {
	s := &scrubber{}
	for _, sec := range secrets {
		s.pairs = append(s.pairs, [2][]byte{[]byte(sec.Value), []byte(echoMask(sec))})
	}
	return s
}

// addMasked adds values masked with PlaceholderMark and '*' (a login's tokens).
func (s *scrubber) addMasked(values ...string) {
	for _, v := range values {
		mask := (PlaceholderMark + strings.Repeat("*", len(v)))[:len(v)]
		s.pairs = append(s.pairs, [2][]byte{[]byte(v), []byte(mask)})
	}
}

func (s *scrubber) replace(v string) string {
	for _, p := range s.pairs {
		v = strings.ReplaceAll(v, string(p[0]), string(p[1]))
	}
	return v
}

// heldBack is how many bytes at the end of b could start a value: they wait for the next read.
func (s *scrubber) heldBack(b []byte) int {
	held := 0
	for _, p := range s.pairs {
		v := p[0]
		for n := min(len(v)-1, len(b)); n > held; n-- {
			if bytes.Equal(b[len(b)-n:], v[:n]) {
				held = n
				break
			}
		}
	}
	return held
}

// scrubReader is a body with its values replaced; it holds back only a tail that could start
// a value, so a stream is not delayed.
type scrubReader struct {
	r    io.Reader
	s    *scrubber
	buf  []byte // scrubbed bytes not yet returned
	tail []byte // bytes held back
	err  error
}

func (s *scrubReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.err != nil {
			if len(s.tail) > 0 {
				s.buf, s.tail = s.tail, nil
				break
			}
			return 0, s.err
		}
		chunk := make([]byte, 32<<10)
		n, err := s.r.Read(chunk)
		s.err = err
		data := append(s.tail, chunk[:n]...)
		for _, pr := range s.s.pairs {
			data = bytes.ReplaceAll(data, pr[0], pr[1])
		}
		h := 0
		if err == nil {
			h = s.s.heldBack(data)
		}
		s.buf = data[:len(data)-h]
		s.tail = append([]byte(nil), data[len(data)-h:]...)
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}
