package servecmd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/lockedbuf"
)

// bearerRoundTripper adds "Authorization: Bearer token" to every request.
type bearerRoundTripper struct{ token string }

func (b bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

// newEchoServer is an MCP server with one tool, echo.
func newEchoServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "http-test", Version: "v0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	return server
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuffer = lockedbuf.Buffer

func testLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startHTTPServe runs serveHTTP on a free loopback port until the test ends (or stop is
// called) and returns the endpoint URL.
func startHTTPServe(t *testing.T, server *mcp.Server, token string) (url string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, ln, server, token, testLogger(logs)) }()
	var once sync.Once
	var serveErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(httpShutdownGrace + 5*time.Second):
				t.Errorf("serveHTTP did not return after its context ended")
			}
		})
		return serveErr
	}
	t.Cleanup(func() {
		_ = stop()
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
	})
	return endpointURL(ln.Addr()), stop
}

func connectHTTP(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test-client", Version: "v0"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearerRoundTripper{token: token}},
		MaxRetries: -1,
	}
	return client.Connect(ctx, transport, nil)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// checkEcho lists the tools of a session and calls echo.
func checkEcho(t *testing.T, ctx context.Context, session *mcp.ClientSession) {
	t.Helper()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" {
		t.Fatalf("tools/list = %+v, want the echo tool", tools.Tools)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatalf("tools/call echo: %v", err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("tools/call echo = %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "echo: hi" {
		t.Fatalf("tools/call echo: content %+v, want text %q", res.Content[0], "echo: hi")
	}
}

func TestServeHTTPWithToken(t *testing.T) {
	const token = "test-token-0123456789"
	url, stop := startHTTPServe(t, newEchoServer(), token)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") || strings.HasSuffix(url, ":0/mcp") {
		t.Fatalf("endpoint URL %q: want http://127.0.0.1:PORT/mcp with the bound port", url)
	}
	ctx := ctxFor(t, time.Minute)
	session, err := connectHTTP(ctx, url, token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	checkEcho(t, ctx, session)

	// Two sessions at once share the server.
	session2, err := connectHTTP(ctx, url, token)
	if err != nil {
		t.Fatalf("second connect: %v", err)
	}
	checkEcho(t, ctx, session2)
	_ = session2.Close()

	// Shutdown with a session still open (and its event stream with it) must be prompt.
	t0 := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("serveHTTP returned %v after its context ended, want nil", err)
	}
	if d := time.Since(t0); d > httpShutdownGrace-time.Second {
		t.Errorf("shutdown took %s with an idle session open: the event stream held it up", d)
	}
	if _, err := session.ListTools(ctx, nil); err == nil {
		t.Errorf("tools/list after the shutdown succeeded")
	}
	_ = session.Close()
}

func TestServeHTTPRejectsMissingOrWrongToken(t *testing.T) {
	const token = "right-token-0123456789"
	url, _ := startHTTPServe(t, newEchoServer(), token)
	base := strings.TrimSuffix(url, "/mcp")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

	for _, tc := range []struct {
		name, method, path, auth string
		wantStatus               int
		wantBody                 string
	}{
		{"no header", "POST", "/mcp", "", 401, "no bearer token"},
		{"wrong token", "POST", "/mcp", "Bearer wrong-token", 401, "invalid token"},
		{"token prefix", "POST", "/mcp", "Bearer right-token", 401, "invalid token"},
		{"token with more", "POST", "/mcp", "Bearer " + token + "x", 401, "invalid token"},
		{"basic scheme", "POST", "/mcp", "Basic " + token, 401, "no bearer token"},
		{"no scheme", "POST", "/mcp", token, 401, "no bearer token"},
		{"GET without token", "GET", "/mcp", "", 401, "no bearer token"},
		{"DELETE without token", "DELETE", "/mcp", "", 401, "no bearer token"},
		{"other path without token", "GET", "/", "", 401, "no bearer token"},
		{"other path with token", "GET", "/other", "Bearer " + token, 404, ""},
		{"right token", "POST", "/mcp", "Bearer " + token, 200, ""},
		{"lower-case scheme", "POST", "/mcp", "bearer " + token, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctxFor(t, 30*time.Second), tc.method, base+tc.path, strings.NewReader(initBody))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantStatus != http.StatusUnauthorized {
				if got := resp.Header.Get("WWW-Authenticate"); got != "" {
					t.Errorf("WWW-Authenticate = %q on a %d response", got, resp.StatusCode)
				}
				return
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != "Bearer" {
				t.Errorf("WWW-Authenticate = %q, want %q", got, "Bearer")
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("Content-Type = %q, want text/plain", ct)
			}
			if !strings.Contains(string(body), tc.wantBody) || strings.Contains(string(body), token) {
				t.Errorf("body %q, want %q (and never the token)", body, tc.wantBody)
			}
		})
	}

	t.Run("go-sdk client with a wrong token", func(t *testing.T) {
		ctx := ctxFor(t, 30*time.Second)
		if session, err := connectHTTP(ctx, url, "wrong-token"); err == nil {
			_ = session.Close()
			t.Fatal("connected with a wrong token")
		} else if !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
			t.Errorf("connect error %q does not say 401 Unauthorized", err)
		}
	})
}

var endpointLine = regexp.MustCompile(`(?m)^MCP endpoint: (\S+)  bearer token: (.*)$`)

// runServeTransport runs serveTransport over HTTP until stop is called and returns the
// endpoint line's URL and token part.
func runServeTransport(t *testing.T, opts *HTTPOptions) (url, tokenPart string, stderr *syncBuffer, stop func() error) {
	t.Helper()
	errOut := &syncBuffer{}
	stdout := &syncBuffer{}
	ios := &iostreams.IOStreams{In: strings.NewReader(""), Out: stdout, ErrOut: errOut}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveTransport(ctx, ios, testLogger(errOut), newEchoServer(), opts) }()
	var once sync.Once
	var serveErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(httpShutdownGrace + 5*time.Second):
				t.Errorf("serveTransport did not return after its context ended")
			}
			if stdout.String() != "" {
				t.Errorf("serveTransport wrote to stdout: %q", stdout.String())
			}
		})
		return serveErr
	}
	t.Cleanup(func() { _ = stop() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := endpointLine.FindStringSubmatch(errOut.String()); m != nil {
			return m[1], m[2], errOut, stop
		}
		select {
		case err := <-done:
			t.Fatalf("serveTransport returned %v before printing the endpoint; stderr:\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no endpoint line on stderr:\n%s", errOut.String())
		}
	}
}

func TestServeHTTPPrintsGeneratedToken(t *testing.T) {
	url, token, stderr, stop := runServeTransport(t, &HTTPOptions{Addr: "127.0.0.1:0"})
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[1-9][0-9]*/mcp$`).MatchString(url) {
		t.Errorf("endpoint %q: want http://127.0.0.1:PORT/mcp with the bound port", url)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Fatalf("printed token %q: want 64 hex digits", token)
	}
	if n := strings.Count(stderr.String(), token); n != 1 {
		t.Errorf("the token appears %d times on stderr, want once", n)
	}
	ctx := ctxFor(t, time.Minute)
	session, err := connectHTTP(ctx, url, token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	checkEcho(t, ctx, session)
	if _, err := connectHTTP(ctx, url, strings.Repeat("0", 64)); err == nil {
		t.Errorf("connected with a wrong token")
	}
	if err := stop(); err != nil {
		t.Errorf("serveTransport returned %v after its context ended, want nil", err)
	}
}

func TestServeHTTPTokenFile(t *testing.T) {
	dir := t.TempDir()

	t.Run("created", func(t *testing.T) {
		file := filepath.Join(dir, "new-token")
		url, tokenPart, stderr, _ := runServeTransport(t, &HTTPOptions{Addr: "localhost:0", TokenFile: file})
		st, err := os.Stat(file)
		if err != nil {
			t.Fatalf("token file not created: %v", err)
		}
		if perm := st.Mode().Perm(); perm != 0o600 {
			t.Errorf("token file mode %v, want 0600", perm)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		token := strings.TrimSuffix(string(data), "\n")
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) || !strings.HasSuffix(string(data), "\n") {
			t.Fatalf("token file holds %q: want 64 hex digits and a newline", data)
		}
		if strings.Contains(stderr.String(), token) {
			t.Errorf("the token written to the file was printed as well:\n%s", stderr.String())
		}
		if !strings.Contains(tokenPart, file) {
			t.Errorf("endpoint line says %q about the token, want the file name %s", tokenPart, file)
		}
		ctx := ctxFor(t, time.Minute)
		session, err := connectHTTP(ctx, url, token)
		if err != nil {
			t.Fatalf("connect with the token from the file: %v", err)
		}
		checkEcho(t, ctx, session)
	})

	t.Run("read", func(t *testing.T) {
		file := filepath.Join(dir, "existing-token")
		const token = "my-own-token-for-tests"
		if err := os.WriteFile(file, []byte("  "+token+" \r\nsecond line ignored\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		url, _, stderr, _ := runServeTransport(t, &HTTPOptions{Addr: "127.0.0.1:0", TokenFile: file})
		if strings.Contains(stderr.String(), token) {
			t.Errorf("the token from the file was printed:\n%s", stderr.String())
		}
		if strings.Contains(stderr.String(), "chmod 600") {
			t.Errorf("warned about a 0600 token file:\n%s", stderr.String())
		}
		ctx := ctxFor(t, time.Minute)
		session, err := connectHTTP(ctx, url, token)
		if err != nil {
			t.Fatalf("connect with the token from the file: %v", err)
		}
		checkEcho(t, ctx, session)
		if data, _ := os.ReadFile(file); !strings.Contains(string(data), "second line ignored") {
			t.Errorf("the token file was rewritten: %q", data)
		}
	})

	t.Run("readable by others", func(t *testing.T) {
		file := filepath.Join(dir, "open-token")
		if err := os.WriteFile(file, []byte("open-token-0123456789\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(file, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, stderr, _ := runServeTransport(t, &HTTPOptions{Addr: "127.0.0.1:0", TokenFile: file})
		if !strings.Contains(stderr.String(), "chmod 600") {
			t.Errorf("no warning about a token file others can read:\n%s", stderr.String())
		}
	})

	for name, content := range map[string]string{"empty": "", "blank first line": "\nsecond-line-token\n", "space inside": "two words\n"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			ios, _, _, errOut := iostreams.Test()
			err := serveTransport(ctxFor(t, 10*time.Second), ios, testLogger(io.Discard), newEchoServer(), &HTTPOptions{Addr: "127.0.0.1:0", TokenFile: file})
			if err == nil || !strings.Contains(err.Error(), file) {
				t.Fatalf("error %v, want one naming %s", err, file)
			}
			if strings.Contains(errOut.String(), "MCP endpoint") {
				t.Errorf("printed an endpoint although the token file is unusable: %q", errOut.String())
			}
		})
	}

	t.Run("unwritable directory", func(t *testing.T) {
		file := filepath.Join(dir, "no-such-dir", "token")
		ios, _, _, _ := iostreams.Test()
		err := serveTransport(ctxFor(t, 10*time.Second), ios, testLogger(io.Discard), newEchoServer(), &HTTPOptions{Addr: "127.0.0.1:0", TokenFile: file})
		if err == nil || !strings.Contains(err.Error(), "token file") {
			t.Fatalf("error %v, want one about the token file", err)
		}
	})
}

func TestServeHTTPAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ios, _, _, _ := iostreams.Test()
	err = serveTransport(ctxFor(t, 10*time.Second), ios, testLogger(io.Discard), newEchoServer(), &HTTPOptions{Addr: ln.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "--http") {
		t.Fatalf("error %v, want a listen error", err)
	}
}

// Clients on every protocol revision the SDK speaks work over HTTP, and each gets the revision
// it asked for: 2026-07-28 (no initialize, no session), 2025-11-25 and 2025-06-18 (sessions).
func TestServeHTTPProtocolRevisions(t *testing.T) {
	const token = "test-token-0123456789"
	logs := &syncBuffer{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	server := newEchoServer()
	// wait blocks until its call is cancelled, and says so.
	cancelled := make(chan struct{}, 8)
	mcp.AddTool(server, &mcp.Tool{Name: "wait", Description: "waits"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ echoArgs) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		case <-time.After(15 * time.Second): // never cancelled: the test fails, it does not hang
			return nil, nil, errors.New("not cancelled")
		}
	})
	go func() { done <- serveHTTP(ctx, ln, server, token, testLogger(logs)) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
	})
	url := endpointURL(ln.Addr())
	for _, pv := range []string{"", "2026-07-28", "2025-11-25", "2025-06-18"} {
		t.Run("version="+pv, func(t *testing.T) {
			want := pv
			if want == "" {
				want = "2026-07-28" // the client's default: the newest
			}
			cctx := ctxFor(t, time.Minute)
			client := mcp.NewClient(&mcp.Implementation{Name: "http-test-client", Version: "v0"}, nil)
			transport := &mcp.StreamableClientTransport{
				Endpoint:   url,
				HTTPClient: &http.Client{Transport: bearerRoundTripper{token: token}},
				MaxRetries: -1,
			}
			session, err := client.Connect(cctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: pv})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer session.Close()
			if got := session.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("negotiated %q, want %q", got, want)
			}
			tools, err := session.ListTools(cctx, nil)
			if err != nil || len(tools.Tools) != 2 || tools.Tools[0].Name != "echo" || tools.Tools[1].Name != "wait" {
				t.Fatalf("tools/list: %v %+v, want echo and wait in that order", err, tools)
			}
			if _, err := session.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
				t.Fatalf("tools/call echo: %v", err)
			}
			// A call the client gives up on is cancelled on the server.
			callCtx, callCancel := context.WithCancel(cctx)
			go func() {
				time.Sleep(200 * time.Millisecond)
				callCancel()
			}()
			if _, err := session.CallTool(callCtx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"text": "x"}}); err == nil {
				t.Error("the cancelled call succeeded")
			}
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Error("the server's handler was not cancelled")
			}
		})
	}
	if strings.Contains(logs.String(), "rejecting request with protocol version") {
		t.Errorf("the server rejected a revision:\n%s", logs.String())
	}
}
