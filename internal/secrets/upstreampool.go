package secrets

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// A session's relay keeps the connections to the providers that a guest connection is done
// with, clean (its last response read to the end, the provider keeping it open), for the next
// guest connection to the same host: each `curl`, each agent process, opens a new connection,
// and the relay's TLS handshake with the provider is then not paid again (net/http's Transport
// does the same for its own requests; the relay speaks HTTP/1.1 through its own reader and
// writer, so it keeps them itself). The pool is the Relay's, one per session: one session's
// connections never carry another's requests.

const (
	// maxIdleUpstream is how many idle connections are kept per host.
	maxIdleUpstream = 4
	// upstreamIdleFor is how long one is kept (providers close idle ones after a minute or
	// more).
	upstreamIdleFor = 30 * time.Second
	// liveCheck is how long a kept connection is read for before use: a provider that closed
	// it has sent its end already.
	liveCheck = time.Millisecond
)

type upstreamPool struct {
	mu    sync.Mutex
	idle  map[string][]*idleUp
	timer func(time.Duration, func()) *time.Timer // time.AfterFunc; tests may replace it
}

type idleUp struct {
	upConn
	timer *time.Timer
}

// upConn is a connection to a provider: TLS over a deadlineConn.
type upConn struct {
	conn *tls.Conn
	dc   *deadlineConn
}

// put keeps conn for target, or closes it when target has maxIdleUpstream already.
func (p *upstreamPool) put(target string, conn upConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[string][]*idleUp{}
	}
	if len(p.idle[target]) >= maxIdleUpstream {
		conn.conn.Close()
		return
	}
	after := p.timer
	if after == nil {
		after = time.AfterFunc
	}
	u := &idleUp{upConn: conn}
	u.timer = after(upstreamIdleFor, func() { p.drop(target, u) })
	p.idle[target] = append(p.idle[target], u)
}

// drop closes u once it has been idle for upstreamIdleFor, unless it was taken.
func (p *upstreamPool) drop(target string, u *idleUp) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, v := range p.idle[target] {
		if v == u {
			p.idle[target] = append(p.idle[target][:i], p.idle[target][i+1:]...)
			u.conn.Close()
			return
		}
	}
}

// get takes the most recent live connection kept for target (ok false: none).
func (p *upstreamPool) get(target string) (upConn, bool) {
	for {
		p.mu.Lock()
		list := p.idle[target]
		if len(list) == 0 {
			p.mu.Unlock()
			return upConn{}, false
		}
		u := list[len(list)-1]
		p.idle[target] = list[:len(list)-1]
		p.mu.Unlock()
		u.timer.Stop()
		if alive(u.upConn) {
			return u.upConn, true
		}
		u.conn.Close()
	}
}

// alive says whether conn, idle, is still open: a read that times out at once found nothing,
// no end and no bytes (a provider sends nothing unasked on an idle HTTP/1.1 connection).
func alive(u upConn) bool {
	u.dc.readBy = time.Now().Add(liveCheck)
	var b [1]byte
	_, err := u.conn.Read(b[:])
	u.dc.readBy = time.Time{}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}
