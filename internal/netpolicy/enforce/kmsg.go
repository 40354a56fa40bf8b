package enforce

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// refusedPacket is what the firewall's LOG line says about a packet it refused.
type refusedPacket struct {
	UID   int
	Dst   string
	Port  int // 0 when the protocol has none (ICMP)
	Proto string
}

// parseKmsgRecord reads one /dev/kmsg record ("PRI,SEQ,USEC,FLAGS;MESSAGE", perhaps followed
// by continuation lines) and returns the refused packet if the message is one of our LOG
// lines with a UID.
func parseKmsgRecord(record string) (refusedPacket, bool) {
	_, msg, ok := strings.Cut(record, ";")
	if !ok {
		return refusedPacket{}, false
	}
	msg, _, _ = strings.Cut(msg, "\n")
	rest, ok := strings.CutPrefix(msg, LogPrefix)
	if !ok {
		return refusedPacket{}, false
	}
	pkt := refusedPacket{UID: -1}
	for _, field := range strings.Fields(rest) {
		key, value, _ := strings.Cut(field, "=")
		switch key {
		case "UID":
			if uid, err := strconv.Atoi(value); err == nil && uid >= 0 {
				pkt.UID = uid
			}
		case "DST":
			pkt.Dst = value
		case "DPT":
			if port, err := strconv.Atoi(value); err == nil && port > 0 && port < 65536 {
				pkt.Port = port
			}
		case "PROTO":
			pkt.Proto = value
		}
	}
	if pkt.UID < 0 || pkt.Dst == "" {
		return refusedPacket{}, false
	}
	return pkt, true
}

// followKmsg reads the kernel log from now on and logs each refused packet of an agent user
// as a blocked direct attempt. It returns when ctx ends or /dev/kmsg cannot be read.
func (p *Proxy) followKmsg(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); f.Close() }()
	// From now on: what was refused before the daemon started was logged by the one before it.
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	buf := make([]byte, 16<<10) // one record per read; records are at most 8 KiB
	for {
		n, err := f.Read(buf)
		if err != nil {
			if errors.Is(err, syscall.EPIPE) {
				continue // records were overwritten before we read them: go on with the next
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		pkt, ok := parseKmsgRecord(string(buf[:n]))
		if !ok {
			continue
		}
		user, _, known := p.policies.lookup(pkt.UID)
		if !known {
			continue
		}
		p.log(user, directEntry(pkt))
	}
}

// directEntry is the log entry of a refused packet.
func directEntry(pkt refusedPacket) netpolicy.Entry {
	reason := "refused by the firewall: only the proxy and guest loopback may be reached"
	if pkt.Port == 53 {
		reason = "DNS query refused: names are resolved by the proxy"
	}
	if pkt.Proto != "" {
		reason += " (" + strings.ToLower(pkt.Proto) + ")"
	}
	return netpolicy.Entry{Host: pkt.Dst, Port: pkt.Port, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaDirect, Reason: reason}
}
