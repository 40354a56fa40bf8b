package staging

import "testing"

func TestParseListeners(t *testing.T) {
	tables := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 1 1 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0
   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1001        0 3 1 0
   3: 0F05A8C0:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 4 1 0
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 5 1 0
   1: 0000000000000000FFFF00000100007F:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 6 1 0
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  1: 0100007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000  1001        0 7 2 0 0
garbage line
   9: zz:1F90 00000000:0000 0A 0 0 0 1001
`
	got := parseListeners(tables, 1001)
	want := []string{"udp 127.0.0.1:53 (host 127.0.0.1:53)", "tcp 127.0.0.1:8080 (host 127.0.0.1:8080)", "tcp [::]:8081 (host 127.0.0.1:8081)", "tcp 127.0.0.1:8082 (host 127.0.0.1:8082)", "tcp 192.168.5.15:9000"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("%d: got %q, want %q", i, got[i], want[i])
		}
	}
}
