package servecmd

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// How serve --http bounds its clients without cutting MCP's long-lived streams.
//
// The go-sdk's streamable handler answers a POST with a JSON body or an SSE stream that lasts
// as long as the tool call, and keeps a GET stream (server-to-client messages) open for the
// whole session, writing an event and flushing it (http.ResponseController) whenever it has
// one, and watching the request's context to end it. So:
//   - headers: http.Server's ReadHeaderTimeout (a client that never finishes them);
//   - a request's body: http.Server's ReadTimeout (headers and body; net/http lifts the read
//     deadline once the body is read, when it starts watching for the client going away, so
//     the handler's stream is not cut at it); readBody reads the body first, so that a body
//     that does not come is logged as such;
//   - writes: boundWrites gives each write and flush its own deadline (a WriteTimeout on the
//     server would bound a whole response: every stream cut at it);
//   - between requests: http.Server's IdleTimeout.
// Each says in the log when it ends a connection: timedConn for the headers and idleness
// (net/http closes those silently), readBody and boundWrites for the others.

// readBody reads a request's body whole (at most httpMaxRequestBytes and a byte, which the
// SDK reads whole anyway) before the handler: a body that does not arrive within
// httpReadTimeout is an error the log names.
func readBody(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(io.LimitReader(r.Body, httpMaxRequestBytes+1))
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					log.Warn("closed an HTTP connection: its request body did not arrive within the read timeout", "remote", r.RemoteAddr, "read_timeout", httpReadTimeout, "bytes", len(body))
					http.Error(w, "request body not received in time", http.StatusRequestTimeout)
					return
				}
				log.Warn("reading an HTTP request body", "remote", r.RemoteAddr, "error", err)
				http.Error(w, "reading the request body failed", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

// boundWrites gives every write and flush of a response httpWriteTimeout.
func boundWrites(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &boundedWriter{ResponseWriter: w, rc: http.NewResponseController(w), log: log, remote: r.RemoteAddr}
		next.ServeHTTP(bw, r)
		// What the server writes after the handler (the end of a chunked body) gets its own.
		_ = bw.rc.SetWriteDeadline(time.Now().Add(httpWriteTimeout))
	})
}

// boundedWriter is a ResponseWriter whose writes each have httpWriteTimeout. It unwraps
// (http.ResponseController, which the SDK flushes through) to the server's.
type boundedWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	log      *slog.Logger
	remote   string
	reported atomic.Bool
}

func (b *boundedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

func (b *boundedWriter) Write(p []byte) (int, error) {
	_ = b.rc.SetWriteDeadline(time.Now().Add(httpWriteTimeout))
	n, err := b.ResponseWriter.Write(p)
	b.check(err)
	return n, err
}

func (b *boundedWriter) FlushError() error {
	_ = b.rc.SetWriteDeadline(time.Now().Add(httpWriteTimeout))
	err := b.rc.Flush()
	b.check(err)
	return err
}

func (b *boundedWriter) Flush() { _ = b.FlushError() }

func (b *boundedWriter) check(err error) {
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && b.reported.CompareAndSwap(false, true) {
		b.log.Warn("closed an HTTP connection: the client did not take what it was sent within the write timeout", "remote", b.remote, "write_timeout", httpWriteTimeout)
	}
}

// timedListener hands out timedConns.
type timedListener struct {
	net.Listener
	log *slog.Logger
}

func (l *timedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &timedConn{Conn: c, log: l.log}, nil
}

// timedConn says in the log when the server's read deadline ends it before a request: no
// complete headers within httpReadHeaderTimeout, or idle for httpIdleTimeout.
type timedConn struct {
	net.Conn
	log *slog.Logger

	mu    sync.Mutex
	state http.ConnState
	read  int // bytes read since the state changed
	once  sync.Once
}

func (c *timedConn) setState(s http.ConnState) {
	c.mu.Lock()
	c.state, c.read = s, 0
	c.mu.Unlock()
}

func (c *timedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.read += n
	state, read := c.state, c.read
	c.mu.Unlock()
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		switch {
		case state == http.StateNew || (state == http.StateIdle && read > 0):
			c.once.Do(func() {
				c.log.Warn("closed an HTTP connection: no complete request headers within the read-header timeout", "remote", c.RemoteAddr().String(), "read_header_timeout", httpReadHeaderTimeout, "bytes", read)
			})
		case state == http.StateIdle:
			c.once.Do(func() {
				c.log.Debug("closed an idle HTTP connection (idle timeout)", "remote", c.RemoteAddr().String(), "idle_timeout", httpIdleTimeout)
			})
		}
	}
	return n, err
}
