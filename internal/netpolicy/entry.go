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
}

const (
	VerdictAllowed = "allowed"
	VerdictBlocked = "blocked"
	ViaProxy       = "proxy"  // the proxy decided
	ViaDirect      = "direct" // the firewall refused a connection that did not use the proxy
)
