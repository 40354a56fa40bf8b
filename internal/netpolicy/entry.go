package netpolicy

import "time"

// Entry is one line of a user's log: one attempt to reach a host.
type Entry struct {
	Time      time.Time `json:"time"`
	Host      string    `json:"host"`
	Port      int       `json:"port"`
	Verdict   string    `json:"verdict"` // VerdictAllowed or VerdictBlocked
	Via       string    `json:"via"`     // ViaProxy or ViaDirect
	BytesUp   int64     `json:"bytes_up"`
	BytesDown int64     `json:"bytes_down"`
	Reason    string    `json:"reason,omitempty"`
	// Command is, for an attempt the proxy refused, the command line of the process that made
	// it, as the guest's proxy found it (the agent's to write: text to show escaped, never a
	// fact to act on; "" when not found). At most MaxEntryCommand bytes.
	Command string `json:"command,omitempty"`
}

// MaxEntryCommand bounds an Entry's Command.
const MaxEntryCommand = 200

const (
	VerdictAllowed = "allowed"
	VerdictBlocked = "blocked"
	ViaProxy       = "proxy"  // the proxy decided
	ViaDirect      = "direct" // the firewall refused a connection that did not use the proxy
)
