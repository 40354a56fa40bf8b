package secrets

import (
	"crypto/rand"
	"crypto/tls"
	"sync"
)

// sessionTickets are the keys of the TLS session tickets a relay gives the guest's clients,
// the same for all its connections: a client's next connection to a bound host resumes the
// session (no certificate, no signature) instead of a full handshake, which costs about ten
// milliseconds on an emulated guest. A tls.Config made per connection would get keys of its
// own, and no ticket would ever be taken back. The keys live in the relay's memory only, for
// its process's life. A ticket binds nothing but the TLS session: the relay serves the target
// the proxy's line names, and a client that offers a ticket from another bound host only skips
// its own check of that host's leaf.
type sessionTickets struct {
	once sync.Once
	keys [][32]byte
}

// use gives cfg the relay's ticket keys.
func (t *sessionTickets) use(cfg *tls.Config) {
	t.once.Do(func() {
		var k [32]byte
		_, _ = rand.Read(k[:])
		t.keys = [][32]byte{k}
	})
	cfg.SetSessionTicketKeys(t.keys)
}
