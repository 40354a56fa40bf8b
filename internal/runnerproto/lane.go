package runnerproto

// The fast lane: a second connection between the host and the runner, which the runner opens
// to a port on the host's loopback through the VM's NAT (Lima's host.lima.internal), and on
// which it answers requests as on its channel. A request on the SSH channel crosses the
// guest's sshd twice, about a millisecond each on an emulated guest: the file tools, one
// request each, are most of what an agent calls. The channel stays: the runner's life, its
// commands and whatever the lane does not carry.
//
// The host's port can be reached by any process of the host, and a port of the host's
// loopback can be a guest listener Lima forwards there. So the two ends prove a key the host
// gave on the channel (internal/keyauth, LaneHello): the host first, so that the runner never
// answers a listener that is not the host; then the runner, so that the host never takes
// answers from anyone else.

// LaneHello opens the fast lane (keyauth).
const LaneHello = "LMCPLANE"

// MaxLaneAddr bounds AttachRequest.Addr.
const MaxLaneAddr = 300

// AttachRequest asks the runner to connect to Addr (host:port), prove Key (hex, keyauth) after
// the host proved it, and answer requests on that connection too.
type AttachRequest struct {
	Addr string `json:"addr"`
	Key  string `json:"key"`
}

// AttachResult: the lane is open.
type AttachResult struct{}
