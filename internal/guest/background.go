package guest

import (
	"context"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Background processes run under supervisors of their own in the guest (see
// internal/runnerproto/background.go): these calls reach them through whichever runner the
// connection has now, so a process started before a handoff or a reconnect is still there
// after it.

// BgStart starts a background process (ErrNoRunner without the runner).
func (c *Conn) BgStart(ctx context.Context, req runnerproto.BgStartRequest) (*runnerproto.BgStartResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.BgStartResult, error) { return r.BgStart(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("starting a background process in the guest: %w", err)
	}
	return res, nil
}

// BgRead reads a background process's output and status.
func (c *Conn) BgRead(ctx context.Context, req runnerproto.BgReadRequest) (*runnerproto.BgReadResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.BgReadResult, error) { return r.BgRead(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("reading background process %d in the guest: %w", req.ID, err)
	}
	return res, nil
}

// BgList lists a group's background processes.
func (c *Conn) BgList(ctx context.Context, req runnerproto.BgListRequest) (*runnerproto.BgListResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.BgListResult, error) { return r.BgList(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("listing the background processes in the guest: %w", err)
	}
	return res, nil
}

// ShellPorts lists the listening sockets of the processes of a `limactl mcp shell` command
// (those whose environment carries its mark): its previews.
func (c *Conn) ShellPorts(ctx context.Context, req runnerproto.ShellPortsRequest) (*runnerproto.ShellPortsResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.ShellPortsResult, error) { return r.ShellPorts(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("listing the shell command's listening ports in the guest: %w", err)
	}
	return res, nil
}

// BgSignal signals a background process's group (then SIGKILL after the grace period).
func (c *Conn) BgSignal(ctx context.Context, req runnerproto.BgSignalRequest) (*runnerproto.BgSignalResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.BgSignalResult, error) { return r.BgSignal(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("signalling background process %d in the guest: %w", req.ID, err)
	}
	return res, nil
}

// BgEnd kills and removes the background processes of an owner, or of a whole session.
func (c *Conn) BgEnd(ctx context.Context, req runnerproto.BgEndRequest) (*runnerproto.BgEndResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.BgEndResult, error) { return r.BgEnd(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("ending the background processes of %s in the guest: %w", req.Group, err)
	}
	return res, nil
}

// viaRunner runs one call of the live link's runner (ErrNoRunner without one); a broken
// connection is dropped so that the next call reconnects.
func viaRunner[T any](ctx context.Context, c *Conn, call func(r *runnerclient.Client) (T, error)) (T, error) {
	l, r, err := c.runnerOf(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	res, err := call(r)
	return res, c.dropIf(l, err)
}
