package tools_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// session serves the tools over conn, in the identity workspace root, to a real go-sdk client.
func session(t *testing.T, conn *guest.Conn, root string) *mcp.ClientSession {
	t.Helper()
	return serve(t, tools.New(conn, tools.Static{WS: workspace.Identity(root)}, tools.DefaultLimits, nil), nil)
}

// serve connects a real go-sdk client (with opts) to a server holding ts.
func serve(t *testing.T, ts *tools.Toolset, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	server := tools.NewServer("")
	ts.Register(server)
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

func TestToolsAgainstSSHD(t *testing.T) {
	srv := sshd.Start(t)
	scratch := fmt.Sprintf("%s/toolsuite-%d", srv.Home, time.Now().UnixNano())
	srv.Run(t, "mkdir", "-p", scratch)
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", scratch) })
	shell := func(t testing.TB, script string) string {
		t.Helper()
		return srv.Run(t, "bash", "-c", "exec 2>/dev/null; "+script)
	}
	for _, noRunner := range []bool{false, true} {
		name := "runner"
		if noRunner {
			name = "session-per-command"
		}
		t.Run(name, func(t *testing.T) {
			conn := guesttest.Connect(t, srv, guest.Options{NoRunner: noRunner})
			toolsuite.Run(t, toolsuite.Env{Session: session(t, conn, scratch), Scratch: scratch, Shell: shell, ToolRoot: scratch, NoRunner: noRunner})
		})
	}
}
