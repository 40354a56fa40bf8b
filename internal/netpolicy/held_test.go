package netpolicy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A record's held connections are guest output: an id that is not the proxy's form, a port
// out of range, an empty host, too many of them, and the whole record is refused.
func TestParseRecordHeld(t *testing.T) {
	good := HeldConn{ID: "0123456789abcdef", Host: "h.test", Port: 443, Since: time.Now().UTC(), SecondsLeft: 60}
	parse := func(held ...HeldConn) error {
		data, _ := json.Marshal(Record{User: "lmcp-x", Source: "log", Held: held})
		_, err := ParseRecord(data, "lmcp-x")
		return err
	}
	if err := parse(good); err != nil {
		t.Fatalf("a good held connection: %v", err)
	}
	for name, mutate := range map[string]func(*HeldConn){
		"id a path":    func(h *HeldConn) { h.ID = "../../etc/passwd" },
		"id upper":     func(h *HeldConn) { h.ID = strings.ToUpper(h.ID) },
		"port 0":       func(h *HeldConn) { h.Port = 0 },
		"no host":      func(h *HeldConn) { h.Host = "" },
		"long host":    func(h *HeldConn) { h.Host = strings.Repeat("a", 513) },
		"time left -1": func(h *HeldConn) { h.SecondsLeft = -1 },
	} {
		bad := good
		mutate(&bad)
		if err := parse(bad); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
	many := make([]HeldConn, MaxHeldPerUser+1)
	for i := range many {
		many[i] = good
	}
	if err := parse(many...); err == nil {
		t.Error("more than MaxHeldPerUser taken")
	}
}
