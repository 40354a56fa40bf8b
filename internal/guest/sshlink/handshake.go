package sshlink

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// How long a handshake with the guest's sshd may take. Several processes starting together (8
// agents' `serve`, each staging) make as many key exchanges at once on a guest that may be
// emulated with 2 vCPUs: a handshake then takes well over 15 s in all, while the guest's sshd
// still answers every few seconds. So what fails a handshake is the guest saying nothing for
// handshakeQuiet (a stalled sshd, a guest that froze), not its length; handshakeMax bounds the
// whole of it all the same. Variables for the tests.
var (
	handshakeQuiet = 15 * time.Second
	handshakeMax   = 2 * time.Minute
	// dropRetries is how many times a connection the guest's sshd closed before it said
	// anything is made again (sshd's MaxStartups drops connections beyond 10 unauthenticated
	// ones at random: a burst of starts meets it), each after a short random pause.
	dropRetries = 3
	dropPause   = 500 * time.Millisecond
)

// quietConn is a connection whose deadline moves on each time the peer sends something, up to
// a hard limit, until finish: the bound of a handshake that makes progress slowly.
type quietConn struct {
	net.Conn
	quiet time.Duration
	hard  time.Time
	heard atomic.Bool // the peer sent at least one byte

	mu       sync.Mutex
	finished bool
}

func newQuietConn(nc net.Conn, quiet time.Duration, hard time.Time) *quietConn {
	c := &quietConn{Conn: nc, quiet: quiet, hard: hard}
	c.extend()
	return c
}

func (c *quietConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.heard.Store(true)
		c.extend()
	}
	return n, err
}

// extend sets the deadline to quiet from now, never past hard; nothing once finished.
func (c *quietConn) extend() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return
	}
	dl := time.Now().Add(c.quiet)
	if dl.After(c.hard) {
		dl = c.hard
	}
	_ = c.Conn.SetDeadline(dl)
}

// finish clears the deadline for good: the handshake is over, the connection lives on (ssh's
// read loop keeps calling Read, which must then set no deadline again).
func (c *quietConn) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished = true
	_ = c.Conn.SetDeadline(time.Time{})
}

// dropped says whether err is the guest's sshd closing a connection before it said anything:
// worth one more try (MaxStartups), unlike a refusal, a timeout or a failed authentication.
func dropped(c *quietConn, err error) bool {
	if c.heard.Load() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// pauseBeforeRetry waits a random time up to dropPause (several processes dropped at once
// should not come back at once), or until ctx ends.
func pauseBeforeRetry(ctx context.Context, hard time.Time) bool {
	d := dropPause/2 + rand.N(dropPause/2+1)
	if time.Now().Add(d).After(hard) {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
