package servecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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

// endpointURL is the URL of the MCP endpoint for a listener's address.
func endpointURL(addr net.Addr) string {
	return "http://" + addr.String() + httpPath
}

// newHTTPHandler serves server over Streamable HTTP at httpPath, every session with the same
// server (so the same tools and staged session as over stdio). Every request, whatever its
// path, must carry "Authorization: Bearer TOKEN".
func newHTTPHandler(server *mcp.Server, token string, log *slog.Logger) http.Handler {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		Logger:              log,
		MaxRequestBodyBytes: httpMaxRequestBytes,
	})
	mux := http.NewServeMux()
	mux.Handle(httpPath, mcpHandler)
	rejected := func(r *http.Request, status int) {
		log.Warn("rejected an HTTP request", "status", status, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
	}
	return httpauth.Require(token, rejected)(mux)
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
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				rctx, cancel := context.WithCancel(r.Context())
				defer cancel()
				stop := context.AfterFunc(streams, cancel)
				defer stop()
				r = r.WithContext(rctx)
			}
			handler.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(endStreams)

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
