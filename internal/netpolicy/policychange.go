package netpolicy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"time"
)

// PolicyChange is one change of an agent user's policy in the guest, as root's `net ensure`
// (or `net remove`: To "open") made it: part of the network record, so that the person reviewing
// the agent's work sees when what was allowed changed (a live `limactl mcp network ... allow`).
type PolicyChange struct {
	Time time.Time `json:"time"`
	// From is the policy before ("" when the user had none: its first set-up), To the policy
	// after ("open": the user's policy was removed). Both as the guest holds them (presets
	// spelled out).
	From string `json:"from"`
	To   string `json:"to"`
}

const (
	// MaxRecordChanges bounds Record.Changes (the newest are kept).
	MaxRecordChanges = 50
	// maxChangeSpec bounds a policy in a change (longer: the line is not one).
	maxChangeSpec = 16 << 10
)

// ParseChanges reads the changes file (a JSON line each, oldest first) and returns the last max
// that check out: a policy that parses, or "" (From) or "open" (To).
func ParseChanges(data []byte, max int) []PolicyChange {
	var out []PolicyChange
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 2*maxChangeSpec+4096)
	for sc.Scan() {
		var c PolicyChange
		if json.Unmarshal(sc.Bytes(), &c) != nil || !c.valid() {
			continue
		}
		out = append(out, c)
		if len(out) > max {
			out = out[1:]
		}
	}
	return out
}

func (c PolicyChange) valid() bool {
	ok := func(spec string, empty string) bool {
		if spec == empty {
			return true
		}
		if len(spec) > maxChangeSpec {
			return false
		}
		_, err := Parse(spec)
		return err == nil
	}
	return !c.Time.IsZero() && ok(c.From, "") && ok(c.To, "open") && c.From != c.To
}
