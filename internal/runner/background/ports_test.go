package background

import (
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

func TestParseListening(t *testing.T) {
	inodes := map[uint64]bool{12345: true, 777: true}
	for _, c := range []struct {
		line string
		want runnerproto.BgPort
		ok   bool
	}{
		{"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345 1 0000000000000000 100 0 0 10 0", runnerproto.BgPort{Port: 8000, Addr: "127.0.0.1"}, true},
		{"   1: 00000000:1F41 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1", runnerproto.BgPort{Port: 8001, Addr: "0.0.0.0"}, true},
		// Not ours, not listening, garbage.
		{"   2: 00000000:1F42 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 999 1", runnerproto.BgPort{}, false},
		{"   3: 0100007F:1F40 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 12345 1", runnerproto.BgPort{}, false},
		{"   4: zz:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345 1", runnerproto.BgPort{}, false},
		{"   5: 00000000:0000 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345 1", runnerproto.BgPort{}, false},
		{"sl local_address", runnerproto.BgPort{}, false},
		// tcp6: "::" and "::1", and a v4-mapped address.
		{"   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345 1", runnerproto.BgPort{Port: 8000, Addr: "::"}, true},
		{"   1: 00000000000000000000000001000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1", runnerproto.BgPort{Port: 8000, Addr: "::1"}, true},
		{"   2: 0000000000000000FFFF00000100007F:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1", runnerproto.BgPort{Port: 8000, Addr: "127.0.0.1"}, true},
	} {
		got, ok := parseListening(c.line, inodes)
		if ok != c.ok || got != c.want {
			t.Errorf("%q: %+v %v, want %+v %v", c.line, got, ok, c.want, c.ok)
		}
	}
}
