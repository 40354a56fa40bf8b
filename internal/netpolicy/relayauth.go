package netpolicy

// The guest's proxy reaches a session's relay on the host two ways. The first is the unix
// socket that sshd listens on in the guest for the relay's process (RelaySocket): each
// connection crosses the guest's sshd, which on an emulated guest costs a new connection
// about ten milliseconds. The second goes straight through the VM's NAT to the port the
// relay listens on at the host's loopback (RelayHost and SecretsSetup.RelayPort), and
// crosses no sshd; the socket stays the fallback.
//
// Anyone can connect to that port: any process of the host, and from the guest any process
// the policy lets reach RelayHost. And a port of the host's loopback can be a guest listener
// that Lima forwards there, which an agent can open. So before anything else each end proves
// that it holds the relay's key (SecretsSetup.RelayKey: made by the relay's process, given to
// root on the set-up's stdin, kept in a file only root reads, never in the agent's reach),
// with internal/keyauth's handshake and RelayHello. The relay proves first, so the proxy never
// sends a line to a listener that is not the relay; the proxy's proof covers the line it
// sends (the target, and the rules the relay enforces for a rule target), so a line cannot be
// changed or replayed on a new connection. After that the connection is the relay's as on the
// socket.

const (
	// RelayHost is the name the guest reaches the host's loopback by (Lima's).
	RelayHost = "host.lima.internal"
	// RelayHello opens a connection to a relay's port (keyauth).
	RelayHello = "LMCPRLY1"
)
