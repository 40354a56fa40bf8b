package netpolicy

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"time"
)

// HeldConn is a connection the guest's proxy holds while the person watching the agent
// decides on it (allow once, allow for the session, deny): `net report` lists them.
type HeldConn struct {
	// ID names it for `net decide`: the proxy's, never the agent's text.
	ID   string `json:"id"`
	Host string `json:"host"`
	Port int    `json:"port"`
	// Since is when the proxy started holding it; SecondsLeft how long it holds it still, as
	// the guest counted when it reported (the guest's clock is not the host's).
	Since       time.Time `json:"since"`
	SecondsLeft int       `json:"seconds_left"`
	// Request is, for a request the session's relay holds on the host (not the guest's proxy),
	// its method and path ("PUT /o/r"): what the agent is told it waits on. The watch never
	// reads it from the guest's record.
	Request string `json:"request,omitempty"`
	// Command is the command line of the process that made it, as the guest's proxy found it
	// (Entry.Command: the agent's text).
	Command string `json:"command,omitempty"`
}

// WatchedFresh is how old a watch's marker (the guest's, which `net report --watch` writes for
// the proxy; the host's, which the watch writes for the session's relay) may be for the watch
// to count as running: a refused connection or request is held only while it is. A watch
// refreshes both at each read, every second, but a read goes through ssh and sudo to the
// guest: on a loaded machine with an emulated guest one took more than 5 s (the old bound),
// and a connection held for the person was refused as "the watch ended" while it ran. A watch
// that stops cleanly takes its marker away (NewHeldID); once one is killed, the agent's
// refused connections are held for at most this long.
const WatchedFresh = 10 * time.Second

const (
	// MaxHeldPerUser caps the connections the proxy holds for one agent user at a time: more
	// are refused at once.
	MaxHeldPerUser = 8
	// DecisionOnce lets the held connection through, that one only; DecisionDeny refuses it now.
	DecisionOnce = "once"
	DecisionDeny = "deny"
)

var heldIDPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// CheckHeldID refuses what is not the form of a held connection's id (a watcher's too).
func CheckHeldID(id string) bool { return heldIDPattern.MatchString(id) }

// NewHeldID is a new random id of the form CheckHeldID accepts: the proxy's for a connection it
// holds, and a watch's for the markers it keeps fresh (the guest's, `net report --watch
// --watcher ID`; the relay's, secrets.MarkWatched). A watch that stops takes its own marker
// away (`net unwatch`, secrets.Unwatch), so that the agent's refused connections are refused
// at once again, not WatchedFresh later, while another watch of the same agent keeps its own.
func NewHeldID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (h HeldConn) valid() bool {
	return CheckHeldID(h.ID) && h.Host != "" && len(h.Host) <= 512 && h.Port >= 1 && h.Port <= 65535 &&
		h.SecondsLeft >= 0 && h.SecondsLeft <= 3600 && len(h.Command) <= MaxEntryCommand
}
