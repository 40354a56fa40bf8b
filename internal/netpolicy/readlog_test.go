package netpolicy

import (
	"strings"
	"testing"
)

func TestReadLog(t *testing.T) {
	log := strings.Join([]string{
		`{"time":"2026-11-25T15:48:21.8862223Z","host":"allowed.test","port":443,"verdict":"allowed","via":"proxy","bytes_up":517,"bytes_down":4096}`,
		`{"time":"2026-11-25T15:48:22Z","host":"allowed.test","port":443,"verdict":"allowed","via":"proxy","bytes_up":10,"bytes_down":20}`,
		`{"time":"2026-11-25T15:48:23Z","host":"other.test","port":80,"verdict":"allowed","via":"proxy","bytes_up":1,"bytes_down":2}`,
		`{"time":"2026-11-25T15:48:24Z","host":"gone.test","port":80,"verdict":"allowed","via":"proxy","reason":"connect failed: refused"}`,
		`not json at all`,
		`{"time":"2026-11-25T15:48:25Z","host":"denied.test","port":443,"verdict":"blocked","via":"proxy","bytes_up":0,"bytes_down":0,"reason":"not on the allowlist"}`,
		`{"time":"2026-11-25T15:48:26Z","host":"x","port":443,"verdict":"maybe","via":"proxy"}`,
		`{"time":"2026-11-25T15:48:26Z","host":"x","port":-1,"verdict":"blocked","via":"proxy"}`,
		strings.Repeat("x", 100000),
		`{"time":"2026-11-25T15:48:27Z","host":"127.0.0.53","port":53,"verdict":"blocked","via":"direct","bytes_up":0,"bytes_down":0,"reason":"DNS query refused: names are resolved by the proxy (udp)"}`,
		`{"time":"2026-11-25T15:48:28Z","host":"1.2.3.4","port":80,"verdict":"blocked","via":"direct","bytes_up":0,"bytes_down":0,"reason":"refused by the firewall"}`,
		`{"time":"2026-11-25T15:48:29Z","host":"1.2.3.4","port":80,"verdict":"blocked","via":"direct"`, // cut by a rotation
	}, "\n")
	s, last, err := ReadLog(strings.NewReader(log), 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.Attempts != 7 || s.Allowed != 4 || s.Blocked != 3 || s.Unreadable != 5 || s.BytesUp != 528 || s.BytesDown != 4118 {
		t.Errorf("summary %+v", s)
	}
	if len(s.HostsReached) != 2 || s.HostsReached[0] != (HostSummary{Host: "allowed.test", Attempts: 2, BytesUp: 527, BytesDown: 4116}) || s.HostsReached[1].Host != "other.test" {
		t.Errorf("hosts reached %+v", s.HostsReached)
	}
	if len(s.HostsBlocked) != 3 || s.LastBlocked == nil || s.LastBlocked.Host != "1.2.3.4" {
		t.Errorf("blocked %+v, last %+v", s.HostsBlocked, s.LastBlocked)
	}
	if len(last) != 2 || last[0].Host != "127.0.0.53" || last[1].Host != "1.2.3.4" {
		t.Errorf("last entries %+v", last)
	}
}

func FuzzReadLog(f *testing.F) {
	f.Add(`{"time":"2026-11-25T15:48:22Z","host":"a","port":443,"verdict":"allowed","via":"proxy","bytes_up":10,"bytes_down":20}` + "\n{\n")
	f.Fuzz(func(t *testing.T, log string) {
		s, last, _ := ReadLog(strings.NewReader(log), 3)
		if len(last) > 3 || s.Allowed+s.Blocked != s.Attempts {
			t.Fatalf("summary %+v, %d entries", s, len(last))
		}
	})
}
