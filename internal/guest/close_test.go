package guest_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
)

// Close ends a connect in progress instead of waiting for it: a server that goes away while
// its first connect is still in the SSH handshake (seconds on a slow guest; here a peer that
// never answers) exits at once, and the call in progress gets ErrClosed.
func TestCloseEndsAConnectInProgress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accept, never answer
		}
	}()
	c := guest.New(func(context.Context) (*sshlink.Target, error) {
		return &sshlink.Target{Name: "silent", Addr: ln.Addr().String(), User: "nobody"}, nil
	}, guest.Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Home(context.Background())
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond) // in the handshake by now
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the handshake (which times out after 15 s)")
	}
	select {
	case err := <-errc:
		if !errors.Is(err, guest.ErrClosed) {
			t.Errorf("the call in progress got %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call in progress did not end")
	}
}
