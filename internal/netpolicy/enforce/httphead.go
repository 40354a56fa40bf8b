package enforce

import (
	"bufio"
	"fmt"
	"io"
	"net/textproto"
	"strings"
)

// The proxy reads HTTP/1 heads itself with net/textproto instead of net/http: net/http brings
// crypto/tls and doubles the runner (3.5 to 7.6 MB), which every guest start reads or installs.
// Bodies are never parsed: after a head the proxy copies bytes as they are.

// maxHeadBytes bounds a request or response head.
const maxHeadBytes = 64 << 10

// requestHead is a request line and its headers.
type requestHead struct {
	Method, Target, Proto string
	Header                textproto.MIMEHeader
}

// responseHead is a status line and its headers.
type responseHead struct {
	StatusLine string // "HTTP/1.1 200 OK"
	Header     textproto.MIMEHeader
}

// headLimit is the reader under a connection's bufio.Reader: it lets a head read at most
// maxHeadBytes, and a body anything.
type headLimit struct {
	r io.Reader
	n int64 // < 0: no limit
}

func (l *headLimit) Read(b []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(b)
	}
	if l.n == 0 {
		return 0, fmt.Errorf("the head is longer than %d bytes", maxHeadBytes)
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= int64(n)
	return n, err
}

// readRequestHead reads one request head. Garbage is an error, never a panic.
func readRequestHead(br *bufio.Reader) (requestHead, error) {
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return requestHead{}, err
	}
	parts := strings.Split(line, " ")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || !strings.HasPrefix(parts[2], "HTTP/1.") {
		return requestHead{}, fmt.Errorf("not an HTTP/1 request line: %q", truncate(line, 80))
	}
	for _, c := range parts[0] {
		if c < 'A' || c > 'Z' {
			return requestHead{}, fmt.Errorf("bad method %q", truncate(parts[0], 20))
		}
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return requestHead{}, fmt.Errorf("reading the headers: %w", err)
	}
	return requestHead{Method: parts[0], Target: parts[1], Proto: parts[2], Header: h}, nil
}

// readResponseHead reads one response head.
func readResponseHead(br *bufio.Reader) (responseHead, error) {
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return responseHead{}, err
	}
	if !strings.HasPrefix(line, "HTTP/1.") || len(line) < 12 {
		return responseHead{}, fmt.Errorf("not an HTTP/1 status line: %q", truncate(line, 80))
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return responseHead{}, fmt.Errorf("reading the response headers: %w", err)
	}
	return responseHead{StatusLine: line, Header: h}, nil
}

// hopByHop are the headers that belong to one hop and are not forwarded (RFC 9110 7.6.1),
// except Transfer-Encoding: the proxy passes bodies as they are, so their framing stays.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Upgrade"}

// forwardHeader is h without the hop-by-hop headers and those that Connection names, with
// Connection: close (each forwarded request gets a connection of its own).
func forwardHeader(h textproto.MIMEHeader) textproto.MIMEHeader {
	out := textproto.MIMEHeader{}
	drop := map[string]bool{}
	for _, name := range hopByHop {
		drop[name] = true
	}
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			drop[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))] = true
		}
	}
	for name, values := range h {
		if !drop[name] {
			out[name] = values
		}
	}
	out.Set("Connection", "close")
	return out
}

// writeHeader writes headers and the blank line that ends a head; values with CR or LF (which
// textproto never returns, but a check costs nothing) are dropped.
func writeHeader(b *strings.Builder, h textproto.MIMEHeader) {
	for name, values := range h {
		for _, v := range values {
			if !strings.ContainsAny(v, "\r\n") && !strings.ContainsAny(name, "\r\n: ") {
				b.WriteString(name + ": " + v + "\r\n")
			}
		}
	}
	b.WriteString("\r\n")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
