package preview

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// The "guest" here is this machine's loopback: Dial connects to addr itself, recording what
// it was asked for.
func TestForwardCarriesAndEnds(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	port := echo.Addr().(*net.TCPAddr).Port
	asked := make(chan string, 10)
	f, err := New(Options{Dial: func(ctx context.Context, addr string) (io.ReadWriteCloser, error) {
		asked <- addr
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A socket on 0.0.0.0 and one on :: of the same port: one forward, to the guest's IPv4
	// loopback. The guest's port is held on this machine (by the echo server): another port.
	got := f.Sync(map[int][]runnerproto.BgPort{3: {{Port: port, Addr: "0.0.0.0"}, {Port: port, Addr: "::"}}})
	if len(got[3]) != 1 || !got[3][0].Moved || got[3][0].HostPort == port || !strings.HasPrefix(got[3][0].HostURL, "http://127.0.0.1:") {
		t.Fatalf("forwards: %+v", got)
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(got[3][0].HostPort))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q %v", buf, err)
	}
	c.Close()
	if a := <-asked; a != "127.0.0.1:"+strconv.Itoa(port) {
		t.Fatalf("dialled %q", a)
	}
	// Same again: the same forward. Then the process no longer listens: gone.
	if again := f.Sync(map[int][]runnerproto.BgPort{3: {{Port: port, Addr: "0.0.0.0"}}}); again[3][0] != got[3][0] {
		t.Fatalf("again: %+v", again)
	}
	if none := f.Sync(map[int][]runnerproto.BgPort{}); len(none) != 0 || len(f.Ports()) != 0 {
		t.Fatalf("after the end: %+v %+v", none, f.Ports())
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(got[3][0].HostPort)); err == nil {
		c.Close()
		t.Fatal("the host port still accepts after the end")
	}
}

func TestPublishIsAnAddress(t *testing.T) {
	for _, s := range []string{"localhost", "0.0.0.0:80", "fe80::1%eth0", "", "-x"} {
		if _, err := ParsePublish(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	for _, s := range []string{"127.0.0.1", "0.0.0.0", "::1"} {
		if _, err := ParsePublish(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}

func TestDialAddr(t *testing.T) {
	for in, want := range map[runnerproto.BgPort]string{
		{Port: 80, Addr: "0.0.0.0"}:   "127.0.0.1:80",
		{Port: 80, Addr: "::"}:        "[::1]:80",
		{Port: 80, Addr: "127.0.0.2"}: "127.0.0.2:80",
		{Port: 80, Addr: "nope"}:      "",
	} {
		if got := dialAddr(in); got != want {
			t.Errorf("%+v: %q, want %q", in, got, want)
		}
	}
}
