package guest_test

import (
	"context"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// Connected says whether the connection is up without connecting: not before the first use
// (and asking does not connect), yes once used, not after Close.
func TestConnectedNeverConnects(t *testing.T) {
	srv := sshd.Start(t)
	c := guesttest.Connect(t, srv, guest.Options{})
	if c.Connected() {
		t.Fatal("Connected before any use")
	}
	if c.Connected() {
		t.Fatal("asking Connected made a connection")
	}
	if _, err := c.Home(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !c.Connected() {
		t.Fatal("not Connected after a call that connected")
	}
	c.Close()
	if c.Connected() {
		t.Fatal("Connected after Close")
	}
}
