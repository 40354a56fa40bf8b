package servecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/httpauth"
)

const (
	// httpPath is the path of the MCP endpoint of `serve --http`.
	httpPath = "/mcp"
	// httpMaxRequestBytes bounds a request body: as much as the stdio transport takes in one
	// message, so that write_file accepts the same content over both.
	httpMaxRequestBytes = 16 << 20
	// httpShutdownGrace is how long requests in flight may take to finish at shutdown.
	httpShutdownGrace = 5 * time.Second
)

// The HTTP server's timeouts, so that no client holds a connection (and its goroutine) without
// end. MCP's streams live for as long as a session or a tool call: a timeout on the whole of
// a response would cut them, so writes are bounded one by one instead (timeouts.go).
var (
	// httpReadHeaderTimeout bounds the headers of a request (a client that never finishes
	// them: slowloris).
	httpReadHeaderTimeout = 30 * time.Second
	// httpReadTimeout bounds a whole request, headers and body; once the body is read the
	// connection has no read deadline while the handler runs (a GET stream sends no body).
	httpReadTimeout = 2 * time.Minute
	// httpWriteTimeout bounds each write of a response: a client that does not take what it
	// is sent (an event, a tool's result) within it loses its connection.
	httpWriteTimeout = time.Minute
	// httpIdleTimeout bounds a kept-alive connection between requests.
	httpIdleTimeout = 2 * time.Minute
)

// endpointURL is the URL of the MCP endpoint for a listener's address.
func endpointURL(addr net.Addr) string {
	return "http://" + addr.String() + httpPath
}

// newHTTPHandler serves server over Streamable HTTP at httpPath, every session with the same
// server (so the same tools and staged session as over stdio). Every request, whatever its
// path, must carry "Authorization: Bearer TOKEN".
//
// Two protocol generations share the endpoint. A client on MCP 2026-07-28 or later sends its
// version in the Mcp-Protocol-Version header of every request and has no sessions: the SDK
// speaks that revision over HTTP only in stateless mode, so those requests go to a stateless
// handler. Every other request (an initialize, and the requests of a session that began with
// one: 2025-11-25, 2025-06-18, ...) goes to the stateful handler, which keeps what those
// revisions need a session for: cancelling a call from another request, and server-to-client
// messages on the GET stream.
func newHTTPHandler(server *mcp.Server, token string, log *slog.Logger) http.Handler {
	getServer := func(*http.Request) *mcp.Server { return server }
	stateful := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:              log,
		MaxRequestBodyBytes: httpMaxRequestBytes,
	})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:              log,
		MaxRequestBodyBytes: httpMaxRequestBytes,
		Stateless:           true,
		// The POST is the whole call: a client that gives up on it (closes the request)
		// cancels the call, and with it the command's process group in the guest.
		PropagateRequestCancellation: true,
	})
	mux := http.NewServeMux()
	mux.Handle(httpPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessionless(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	}))
	rejected := func(r *http.Request, status int) {
		log.Warn("rejected an HTTP request", "status", status, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
	}
	return httpauth.Require(token, rejected)(readBody(mux, log))
}

// firstSessionlessVersion is the first MCP revision without sessions (SEP-2575, SEP-2567).
const firstSessionlessVersion = "2026-07-28"

// sessionless says whether r comes from a client on a revision without sessions: its
// Mcp-Protocol-Version header names 2026-07-28 or later (revisions are dates, so they sort as
// strings) and it does not belong to a session of an older revision.
func sessionless(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return v >= firstSessionlessVersion && r.Header.Get("Mcp-Session-Id") == ""
}

// serveHTTP serves server over Streamable HTTP on ln until ctx is done, then shuts down: it
// stops accepting connections, ends the clients' event streams, gives requests in flight
// httpShutdownGrace to finish and closes the MCP sessions. It returns nil after a shutdown.
func serveHTTP(ctx context.Context, ln net.Listener, server *mcp.Server, token string, log *slog.Logger) error {
	handler := newHTTPHandler(server, token, log)
	// A client's GET stream (server-to-client messages) lasts as long as its session: end it
	// when the shutdown starts, or Shutdown would wait for it until the grace period ends.
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	srv := &http.Server{
		Handler: boundWrites(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				rctx, cancel := context.WithCancel(r.Context())
				defer cancel()
				stop := context.AfterFunc(streams, cancel)
				defer stop()
				r = r.WithContext(rctx)
			}
			handler.ServeHTTP(w, r)
		}), log),
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		IdleTimeout:       httpIdleTimeout,
		// No WriteTimeout: it would bound a whole response, and a GET stream lasts as long
		// as its session; boundWrites bounds each write instead.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// A connection accepted but without a request yet (a client reconnecting its GET stream
	// as the shutdown starts) carries nothing in flight, yet Shutdown counts it as busy for 5
	// seconds: close those at once.
	fresh := newFreshConns()
	srv.ConnState = func(c net.Conn, state http.ConnState) {
		fresh.track(c, state)
		if tc, ok := c.(*timedConn); ok {
			tc.setState(state)
		}
	}
	ln = &timedListener{Listener: ln, log: log}
	srv.RegisterOnShutdown(func() {
		endStreams()
		fresh.closeAll()
	})

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving HTTP on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	log.Debug("shutting down the HTTP server")
	sctx, cancel := context.WithTimeout(context.Background(), httpShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("requests still in flight after the shutdown grace period; closing their connections", "error", err)
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("HTTP server", "error", err)
	}
	for ss := range server.Sessions() {
		_ = ss.Close()
	}
	return nil
}

// freshConns are the connections of an http.Server that have not sent a request yet.
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newFreshConns() *freshConns { return &freshConns{conns: map[net.Conn]struct{}{}} }

// track is the server's ConnState hook.
func (f *freshConns) track(c net.Conn, state http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if state == http.StateNew {
		f.conns[c] = struct{}{}
		return
	}
	delete(f.conns, c)
}

// closeAll closes the connections that have not sent a request yet.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
	}
}
