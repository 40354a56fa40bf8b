package sshlink

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
)

// GuestDialer is a Transport that opens TCP connections from the guest's sshd to an address
// the guest reaches (ssh's direct-tcpip channel, what `ssh -L` and `ssh -W` use): the
// previews of background processes (internal/preview). Both Transports are one.
type GuestDialer interface {
	DialGuest(ctx context.Context, addr string) (io.ReadWriteCloser, error)
}

// DialGuest opens a direct-tcpip channel of the connection to addr ("127.0.0.1:8000").
func (d *Direct) DialGuest(ctx context.Context, addr string) (io.ReadWriteCloser, error) {
	c, err := d.client.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s in the guest: %w", addr, err)
	}
	return c, nil
}

// DialGuest runs `ssh -W addr` through the master: its standard input and output are the
// connection. A refused connection is seen as the process's end (an empty read).
func (t *masterTransport) DialGuest(_ context.Context, addr string) (io.ReadWriteCloser, error) {
	if strings.HasPrefix(addr, "-") {
		return nil, fmt.Errorf("guest address %q", addr)
	}
	c := t.m.command("-W", addr, "--", t.m.host)
	stdin, stdout, p, err := t.m.startPipes(c, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s in the guest: %w", addr, err)
	}
	// Not kept with the transport's processes (that list is for the long-lived ones): it ends
	// with its connection, and when the master goes.
	return &procConn{r: stdout, w: stdin, p: p}, nil
}

// procConn is an ssh -W process as a connection.
type procConn struct {
	r    io.Reader
	w    io.WriteCloser
	p    *proc
	once sync.Once
}

func (c *procConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *procConn) Write(b []byte) (int, error) { return c.w.Write(b) }

// CloseWrite ends what is sent (ssh sends EOF on the channel).
func (c *procConn) CloseWrite() error { return c.w.Close() }

func (c *procConn) Close() error {
	c.once.Do(func() {
		_ = c.w.Close()
		c.p.kill()
	})
	return nil
}
