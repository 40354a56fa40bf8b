package guest

import (
	"context"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Background processes run under supervisors of their own in the guest (see
// internal/runnerproto/background.go): these calls reach them through whichever runner the
// connection has now, so a process started before a handoff or a reconnect is still there
// after it.

// The background calls' requests and results, as the runner's protocol has them.
type (
	BgOutput        = runnerproto.BgOutput
	BgStatus        = runnerproto.BgStatus
	BgStartRequest  = runnerproto.BgStartRequest
	BgStartResult   = runnerproto.BgStartResult
	BgReadRequest   = runnerproto.BgReadRequest
	BgReadResult    = runnerproto.BgReadResult
	BgListRequest   = runnerproto.BgListRequest
	BgListResult    = runnerproto.BgListResult
	BgSignalRequest = runnerproto.BgSignalRequest
	BgSignalResult  = runnerproto.BgSignalResult
	BgEndRequest    = runnerproto.BgEndRequest
	BgEndResult     = runnerproto.BgEndResult
)

// BgStart starts a background process (ErrNoRunner without the runner).
func (c *Conn) BgStart(ctx context.Context, req runnerproto.BgStartRequest) (*runnerproto.BgStartResult, error) {
	resp, err := c.bgCall(ctx, &runnerproto.Request{BgStart: &req})
	if err != nil {
		return nil, fmt.Errorf("starting a background process in the guest: %w", err)
	}
	return resp.BgStart, nil
}

// BgRead reads a background process's output and status.
func (c *Conn) BgRead(ctx context.Context, req runnerproto.BgReadRequest) (*runnerproto.BgReadResult, error) {
	resp, err := c.bgCall(ctx, &runnerproto.Request{BgRead: &req})
	if err != nil {
		return nil, fmt.Errorf("reading background process %d in the guest: %w", req.ID, err)
	}
	return resp.BgRead, nil
}

// BgList lists a group's background processes.
func (c *Conn) BgList(ctx context.Context, req runnerproto.BgListRequest) (*runnerproto.BgListResult, error) {
	resp, err := c.bgCall(ctx, &runnerproto.Request{BgList: &req})
	if err != nil {
		return nil, fmt.Errorf("listing the background processes in the guest: %w", err)
	}
	return resp.BgList, nil
}

// BgSignal signals a background process's group (then SIGKILL after the grace period).
func (c *Conn) BgSignal(ctx context.Context, req runnerproto.BgSignalRequest) (*runnerproto.BgSignalResult, error) {
	resp, err := c.bgCall(ctx, &runnerproto.Request{BgSignal: &req})
	if err != nil {
		return nil, fmt.Errorf("signalling background process %d in the guest: %w", req.ID, err)
	}
	return resp.BgSignal, nil
}

// BgEnd kills and removes the background processes of an owner, or of a whole session.
func (c *Conn) BgEnd(ctx context.Context, req runnerproto.BgEndRequest) (*runnerproto.BgEndResult, error) {
	resp, err := c.bgCall(ctx, &runnerproto.Request{BgEnd: &req})
	if err != nil {
		return nil, fmt.Errorf("ending the background processes of %s in the guest: %w", req.Group, err)
	}
	return resp.BgEnd, nil
}

func (c *Conn) bgCall(ctx context.Context, req *runnerproto.Request) (*runnerproto.Response, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.call(ctx, l, req) // checked against the request (replies.go)
}
