package guest

import (
	"context"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
)

// Output exposes output (the Lima user's commands of NetRecord, SetAgentPolicy and
// ReleaseAgent) to the external tests.
func (c *Conn) Output(ctx context.Context, cmd string) (string, error) {
	l, err := c.get(ctx)
	if err != nil {
		return "", err
	}
	return c.output(ctx, l, cmd)
}

// FakeProvider exposes fakeProvider (relay_sshd_test.go) to the external tests.
var FakeProvider = fakeProvider

// Runner exposes the connection's runner client (connecting if needed) to the external tests.
func (c *Conn) Runner(ctx context.Context) (*runnerclient.Client, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	return l.ops.runner()
}
