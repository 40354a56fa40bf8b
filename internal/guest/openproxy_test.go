package guest

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// FuzzReadConnectHead: whatever the guest sends, the head's reader never panics, never reads
// past the head's end, and a target it returns is a host:port with a port in range, in lower
// case, with none of the characters a host never has.
func FuzzReadConnectHead(f *testing.F) {
	for _, s := range []string{
		"CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\nTLS",
		"CONNECT API.Example.TEST.:443 HTTP/1.1\r\n\r\n",
		"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n",
		"GET http://x/ HTTP/1.1\r\n\r\n",
		"CONNECT a:0 HTTP/1.1\r\n\r\n",
		"CONNECT a:65536 HTTP/1.1\r\n\r\n",
		"CONNECT a b:1 HTTP/1.1\r\n\r\n",
		"CONNECT @:1 HTTP/1.1\n\n",
		"CONNECT x:1 HTTP/2\r\n\r\n",
		"\r\n\r\n",
		"CONNECT " + strings.Repeat("a", 300) + ":443 HTTP/1.1\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := strings.NewReader(s)
		target, err := readConnectHead(r)
		if err != nil {
			return
		}
		consumed := s[:len(s)-r.Len()]
		if !strings.HasSuffix(consumed, "\n\n") && !strings.HasSuffix(consumed, "\r\n\r\n") {
			t.Fatalf("read past the head or not to its end: %q", consumed)
		}
		if strings.Contains(consumed[:len(consumed)-2], "\r\n\r\n") || strings.Contains(consumed[:len(consumed)-1], "\n\n") {
			t.Fatalf("read past the head's end: %q", consumed)
		}
		host, port, err := net.SplitHostPort(target)
		if err != nil {
			t.Fatalf("target %q: %v", target, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			t.Fatalf("target %q: port", target)
		}
		if host == "" || host != strings.ToLower(host) || strings.HasSuffix(host, ".") || strings.ContainsAny(host, " \t\r\n\x00/@") {
			t.Fatalf("target %q: host", target)
		}
	})
}

// TestOpenSecretsDirOf: the guest's answer naming the secrets' directory is taken only as one
// clean absolute path ending in the id this side chose.
func TestOpenSecretsDirOf(t *testing.T) {
	const id = "0123456789abcdef"
	if dir, err := openSecretsDirOf([]byte("/home/u/.cache/limactl-mcp/secrets/"+id+"\n"), id); err != nil || dir != "/home/u/.cache/limactl-mcp/secrets/"+id {
		t.Errorf("a good answer: %q %v", dir, err)
	}
	for _, bad := range []string{
		"", "\n", id, "relative/" + id, "/a/../" + id + "/../" + id, "/a//" + id, "/a/" + id + "/",
		"/a/other", "/a/" + id + "\n/b/" + id, "/a\r/" + id, "/a\x00/" + id, "/" + strings.Repeat("a", 5000) + "/" + id,
		"/a/" + id + "\n\n",
	} {
		if dir, err := openSecretsDirOf([]byte(bad), id); err == nil {
			t.Errorf("%q taken as %q", bad, dir)
		} else if strings.ContainsAny(err.Error(), "\r\x00") {
			t.Errorf("the error carries the guest's control characters: %q", err)
		}
	}
}
