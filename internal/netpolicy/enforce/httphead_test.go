package enforce

import (
	"bufio"
	"net/textproto"
	"strings"
	"testing"
)

func TestReadRequestHead(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("CONNECT files.pypi.org:443 HTTP/1.1\r\nHost: files.pypi.org:443\r\nProxy-Connection: keep-alive\r\n\r\nTLS"))
	req, err := readRequestHead(br)
	if err != nil || req.Method != "CONNECT" || req.Target != "files.pypi.org:443" || req.Header.Get("Host") != "files.pypi.org:443" {
		t.Fatalf("%+v, %v", req, err)
	}
	if rest, _ := br.Peek(3); string(rest) != "TLS" {
		t.Errorf("bytes after the head: %q", rest)
	}
	for _, bad := range []string{"", "\r\n\r\n", "GET / HTTP/2\r\n\r\n", "get / HTTP/1.1\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nbad header\r\n\r\n", "\x00\x01\x02"} {
		if _, err := readRequestHead(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestHeadLimit(t *testing.T) {
	long := "GET http://a/ HTTP/1.1\r\nX: " + strings.Repeat("a", maxHeadBytes) + "\r\n\r\n"
	_, err := readRequestHead(bufio.NewReader(&headLimit{r: strings.NewReader(long), n: maxHeadBytes}))
	if err == nil {
		t.Fatal("a head longer than the limit was read")
	}
}

func TestForwardHeader(t *testing.T) {
	h := textproto.MIMEHeader{
		"Connection": {"keep-alive, X-Secret"}, "X-Secret": {"1"}, "Proxy-Authorization": {"Basic x"},
		"Keep-Alive": {"300"}, "Upgrade": {"h2c"}, "Accept": {"*/*"}, "Transfer-Encoding": {"chunked"},
	}
	got := forwardHeader(h)
	for _, gone := range []string{"X-Secret", "Proxy-Authorization", "Keep-Alive", "Upgrade"} {
		if got.Get(gone) != "" {
			t.Errorf("%s forwarded", gone)
		}
	}
	if got.Get("Accept") != "*/*" || got.Get("Connection") != "close" || got.Get("Transfer-Encoding") != "chunked" {
		t.Errorf("forwarded header %v", got)
	}
}

func FuzzReadRequestHead(f *testing.F) {
	f.Add("GET http://a.org/x?y HTTP/1.1\r\nHost: a.org\r\n\r\n")
	f.Add("CONNECT [::1]:443 HTTP/1.1\r\n\r\n")
	f.Fuzz(func(t *testing.T, data string) {
		req, err := readRequestHead(bufio.NewReader(&headLimit{r: strings.NewReader(data), n: maxHeadBytes}))
		if err != nil {
			return
		}
		_, _, _ = splitTarget(req.Target, 0)
		_, _, _ = splitTarget(req.Target, 80)
		var b strings.Builder
		writeHeader(&b, forwardHeader(req.Header))
		if strings.Count(b.String(), "\r\n\r\n") != 1 || !strings.HasSuffix(b.String(), "\r\n\r\n") {
			t.Fatalf("written header %q has a blank line inside", b.String())
		}
	})
}
