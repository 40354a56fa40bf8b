package enforce

import "github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
import "testing"

func TestParseKmsgRecord(t *testing.T) {
	// Captured from the Debian 12 guest (kernel 6.1) with the rules of a uid 1002 agent.
	for _, tc := range []struct {
		record string
		want   refusedPacket
		ok     bool
	}{
		{"4,462,258270634,-;limactl-mcp-net: IN= OUT=eth0 SRC=192.168.5.15 DST=1.2.3.4 LEN=60 TOS=0x00 PREC=0x00 TTL=64 ID=20920 DF PROTO=TCP SPT=35608 DPT=80 WINDOW=64240 RES=0x00 SYN URGP=0 UID=1002 GID=1002 \n",
			refusedPacket{UID: 1002, Dst: "1.2.3.4", Port: 80, Proto: "TCP"}, true},
		{"4,463,258688117,-;limactl-mcp-net: IN= OUT=eth0 SRC=192.168.5.15 DST=192.168.5.2 LEN=57 TOS=0x00 PREC=0x00 TTL=64 ID=19469 DF PROTO=UDP SPT=33709 DPT=47515 LEN=37 UID=1002 GID=1002 \n",
			refusedPacket{UID: 1002, Dst: "192.168.5.2", Port: 47515, Proto: "UDP"}, true},
		{"4,470,260133911,-;limactl-mcp-net: IN= OUT=lo SRC=127.0.0.1 DST=127.0.0.53 LEN=29 TOS=0x00 PREC=0x00 TTL=64 ID=52061 DF PROTO=UDP SPT=41139 DPT=53 LEN=9 UID=1002 GID=1002 \n",
			refusedPacket{UID: 1002, Dst: "127.0.0.53", Port: 53, Proto: "UDP"}, true},
		{"4,471,260133999,-;limactl-mcp-net: IN= OUT=eth0 SRC=fec0::5055:55ff:fe12:3456 DST=2001:0db8:0000:0000:0000:0000:0000:0001 LEN=80 TC=0 HOPLIMIT=64 FLOWLBL=12345 PROTO=TCP SPT=40000 DPT=80 WINDOW=64800 RES=0x00 SYN URGP=0 UID=1002 GID=1002 \n",
			refusedPacket{UID: 1002, Dst: "2001:0db8:0000:0000:0000:0000:0000:0001", Port: 80, Proto: "TCP"}, true},
		{"4,472,1,-;limactl-mcp-net: IN= OUT=eth0 SRC=192.168.5.15 DST=1.1.1.1 LEN=84 PROTO=ICMP TYPE=8 CODE=0 ID=3 SEQ=1 UID=1002 GID=1002 \n",
			refusedPacket{UID: 1002, Dst: "1.1.1.1", Port: 0, Proto: "ICMP"}, true},
		{"30,445,5976241,-;systemd[1]: Started systemd-journald.service - Journal Service.\n", refusedPacket{}, false},
		{"4,1,1,-;limactl-mcp-net: IN= OUT=eth0 DST=1.2.3.4 DPT=80\n", refusedPacket{}, false}, // no UID
		{"garbage", refusedPacket{}, false},
		{"4,1,1,-;limactl-mcp-net: UID=abc DST=x DPT=99999", refusedPacket{}, false},
	} {
		got, ok := parseKmsgRecord(tc.record)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseKmsgRecord(%q) = %+v, %v; want %+v, %v", tc.record, got, ok, tc.want, tc.ok)
		}
	}
	if e := directEntry(refusedPacket{UID: 1, Dst: "127.0.0.53", Port: 53, Proto: "UDP"}); e.Via != netpolicy.ViaDirect || e.Verdict != netpolicy.VerdictBlocked || e.Reason != "DNS query refused: names are resolved by the proxy (udp)" {
		t.Errorf("DNS entry: %+v", e)
	}
}

func FuzzParseKmsgRecord(f *testing.F) {
	f.Add("4,462,258270634,-;limactl-mcp-net: IN= OUT=eth0 DST=1.2.3.4 PROTO=TCP DPT=80 UID=1002 GID=1002 \n")
	f.Fuzz(func(t *testing.T, record string) {
		if pkt, ok := parseKmsgRecord(record); ok && (pkt.UID < 0 || pkt.Dst == "" || pkt.Port < 0 || pkt.Port > 65535) {
			t.Fatalf("accepted %+v", pkt)
		}
	})
}
