package servecmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// shortTimeouts makes the HTTP server's timeouts d for a test.
func shortTimeouts(t *testing.T, d time.Duration) {
	h, r, w, i := httpReadHeaderTimeout, httpReadTimeout, httpWriteTimeout, httpIdleTimeout
	httpReadHeaderTimeout, httpReadTimeout, httpWriteTimeout, httpIdleTimeout = d, d, d, d
	t.Cleanup(func() { httpReadHeaderTimeout, httpReadTimeout, httpWriteTimeout, httpIdleTimeout = h, r, w, i })
}

// startTimedServe runs serveHTTP with server and returns the URL, the listener's address and
// the logs.
func startTimedServe(t *testing.T, server *mcp.Server, token string) (string, string, *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, ln, server, token, testLogger(logs)) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
	})
	return endpointURL(ln.Addr()), ln.Addr().String(), logs
}

// waitLog waits (boundedly) until the logs hold s.
func waitLog(t *testing.T, logs *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// closedByServer reads from c until the server closes it (bounded).
func closedByServer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s: the server kept the connection open", what)
	}
}

// With every timeout at a fraction of what the session lasts, a real MCP client over HTTP
// keeps its session: its GET stream (server-to-client messages) outlives the read, write and
// idle timeouts, a tool call longer than all of them returns, and idle connections are closed
// (and said so in the log) without the client noticing.
func TestServeHTTPTimeoutsKeepMCPStreams(t *testing.T) {
	const token = "test-token-0123456789"
	shortTimeouts(t, 2*time.Second)
	server := newEchoServer()
	mcp.AddTool(server, &mcp.Tool{Name: "slow", Description: "takes a while"}, func(ctx context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(8 * time.Second): // four times every timeout
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow: " + in.Text}}}, nil, nil
	})
	url, _, logs := startTimedServe(t, server, token)
	for _, pv := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(pv, func(t *testing.T) {
			ctx := ctxFor(t, 2*time.Minute)
			changed := make(chan struct{}, 4)
			client := mcp.NewClient(&mcp.Implementation{Name: "http-test-client", Version: "v0"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint:   url,
				HTTPClient: &http.Client{Transport: bearerRoundTripper{token: token}},
				MaxRetries: -1,
			}, &mcp.ClientSessionOptions{ProtocolVersion: pv})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer session.Close()
			time.Sleep(8 * time.Second) // every timeout, four times over
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError {
				t.Fatalf("a tool call longer than the timeouts: %v %+v", err, res)
			}
			checkEcho2(t, ctx, session)
			if pv == "2025-11-25" {
				// A message on the session's GET stream, after the timeouts passed.
				mcp.AddTool(server, &mcp.Tool{Name: "late", Description: "added late"}, func(context.Context, *mcp.CallToolRequest, echoArgs) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{}, nil, nil
				})
				defer server.RemoveTools("late")
				select {
				case <-changed:
				case <-time.After(time.Minute):
					t.Fatal("no tools/list_changed on the GET stream after the timeouts: the stream was cut")
				}
			}
		})
	}
	waitLog(t, logs, "idle timeout")
	if strings.Contains(logs.String(), "write timeout") || strings.Contains(logs.String(), "within the read timeout") {
		t.Errorf("a timeout cut a well-behaved client:\n%s", logs.String())
	}
}

// checkEcho2 calls echo (the tool list may hold more than echo here).
func checkEcho2(t *testing.T, ctx context.Context, session *mcp.ClientSession) {
	t.Helper()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call echo: %v %+v", err, res)
	}
}

// A client that never finishes its headers (slowloris: a header byte now and then) is closed
// at the read-header timeout, and the log says so.
func TestServeHTTPSlowlorisHeaders(t *testing.T) {
	shortTimeouts(t, time.Second)
	_, addr, logs := startTimedServe(t, newEchoServer(), "test-token-0123456789")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		fmt.Fprint(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := fmt.Fprintf(c, "X-%d: y\r\n", i); err != nil {
				return
			}
		}
	}()
	closedByServer(t, c, "slowloris")
	waitLog(t, logs, "no complete request headers within the read-header timeout")
}

// A client that sends its headers and never its body is closed at the read timeout (before,
// it held the connection and a goroutine for ever), and the log says so.
func TestServeHTTPSlowBody(t *testing.T) {
	const token = "test-token-0123456789"
	shortTimeouts(t, time.Second)
	_, addr, logs := startTimedServe(t, newEchoServer(), token)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", token)
	closedByServer(t, c, "a body that never comes")
	waitLog(t, logs, "request body did not arrive within the read timeout")
}

// A kept-alive connection with no further request is closed at the idle timeout (before: never).
func TestServeHTTPIdleConnection(t *testing.T) {
	shortTimeouts(t, time.Second)
	_, addr, logs := startTimedServe(t, newEchoServer(), "test-token-0123456789")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") // no token: 401, and the connection kept alive
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d", resp.StatusCode)
	}
	closedByServer(t, c, "an idle connection")
	waitLog(t, logs, "idle timeout")
}

// A client that does not read what it is sent is dropped at the write timeout, and the log
// says so: a real MCP client whose connection stops reading mid-session, asking for a result
// larger than the sockets hold.
func TestServeHTTPClientThatDoesNotRead(t *testing.T) {
	const token = "test-token-0123456789"
	shortTimeouts(t, time.Second)
	url, _, logs := startTimedServe(t, newEchoServer(), token)
	var stalled atomic.Bool
	unstall := make(chan struct{})
	defer close(unstall)
	// A connection made once stalled is set never reads; none is reused (a kept-alive one the
	// server closed would look alive to a client that no longer reads).
	transport := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		_ = c.(*net.TCPConn).SetReadBuffer(4096)
		return &stallConn{Conn: c, stalled: stalled.Load(), unstall: unstall}, nil
	}}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test-client", Version: "v0"}, nil)
	ctx := ctxFor(t, 2*time.Minute)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: authTransport{token: token, rt: transport}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	checkEcho2(t, ctx, session)
	stalled.Store(true)
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go session.CallTool(callCtx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": strings.Repeat("x", 12<<20)}})
	waitLog(t, logs, "did not take what it was sent within the write timeout")
}

// stallConn stops reading once stalled is set (a client that no longer reads).
type stallConn struct {
	net.Conn
	stalled bool
	unstall chan struct{}
}

func (c *stallConn) Read(p []byte) (int, error) {
	if c.stalled {
		<-c.unstall
		return 0, io.EOF
	}
	return c.Conn.Read(p)
}

type authTransport struct {
	token string
	rt    http.RoundTripper
}

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return a.rt.RoundTrip(r)
}
