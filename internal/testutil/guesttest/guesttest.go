// Package guesttest connects a guest.Conn to a real sshd started by the test (see
// internal/testutil/sshd), which stands in for a Lima guest.
package guesttest

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// Target is how to reach srv.
func Target(srv *sshd.Server) *sshlink.Target {
	return &sshlink.Target{
		Name:            "sshd-test",
		Addr:            srv.Addr,
		User:            srv.User,
		Signers:         []ssh.Signer{srv.ClientSigner},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey),
		Arch:            runtime.GOARCH,
	}
}

// Connect returns a connection to srv, closed when the test ends.
func Connect(t testing.TB, srv *sshd.Server, opts guest.Options) *guest.Conn {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	c := guest.New(func(context.Context) (*sshlink.Target, error) { return Target(srv), nil }, opts)
	t.Cleanup(func() { c.Close() })
	return c
}
