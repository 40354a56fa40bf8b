package guest

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
)

// DialGuest opens a TCP connection from the guest's sshd to addr ("127.0.0.1:8000"), over
// the live link (connecting if there is none): the previews of background processes. The
// guest side of it runs as the connection's user (under a network policy, the agent user,
// whose firewall lets it reach the guest's loopback).
func (c *Conn) DialGuest(ctx context.Context, addr string) (io.ReadWriteCloser, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := l.t.(sshlink.GuestDialer)
	if !ok {
		return nil, errors.New("this connection to the guest cannot forward ports")
	}
	rw, err := d.DialGuest(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("forwarding to the guest: %w", err)
	}
	return rw, nil
}
