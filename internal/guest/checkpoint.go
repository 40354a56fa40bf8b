package guest

import (
	"context"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Checkpoints of a staged copy are taken and restored by the runner in the guest (see
// internal/runnerproto/checkpoint.go): nothing of the content crosses the link.

// The checkpoint calls' requests and results, as the runner's protocol has them.
type (
	CkptTree            = runnerproto.CkptTree
	CkptLimits          = runnerproto.CkptLimits
	CkptInfo            = runnerproto.CkptInfo
	CkptChange          = runnerproto.CkptChange
	CkptCreateRequest   = runnerproto.CkptCreateRequest
	CkptCreateResult    = runnerproto.CkptCreateResult
	CkptListResult      = runnerproto.CkptListResult
	CkptRestoreRequest  = runnerproto.CkptRestoreRequest
	CkptRestoreResult   = runnerproto.CkptRestoreResult
	CkptManifestRequest = runnerproto.CkptManifestRequest
	CkptManifestResult  = runnerproto.CkptManifestResult
)

// CkptCreate takes a checkpoint (ErrNoRunner without the runner).
func (c *Conn) CkptCreate(ctx context.Context, req runnerproto.CkptCreateRequest) (*runnerproto.CkptCreateResult, error) {
	resp, err := c.bgCall(ctx, &runnerproto.Request{CkptCreate: &req})
	if err != nil {
		return nil, fmt.Errorf("taking a checkpoint in the guest: %w", err)
	}
	return resp.CkptCreate, nil
}

// CkptList lists a session's checkpoints.
func (c *Conn) CkptList(ctx context.Context, session string) (*runnerproto.CkptListResult, error) {
	resp, err := c.bgCall(ctx, &runnerproto.Request{CkptList: &runnerproto.CkptListRequest{Session: session}})
	if err != nil {
		return nil, fmt.Errorf("listing the checkpoints in the guest: %w", err)
	}
	return resp.CkptList, nil
}

// CkptRestore restores a tree to a checkpoint.
func (c *Conn) CkptRestore(ctx context.Context, req runnerproto.CkptRestoreRequest) (*runnerproto.CkptRestoreResult, error) {
	resp, err := c.bgCall(ctx, &runnerproto.Request{CkptRestore: &req})
	if err != nil {
		return nil, fmt.Errorf("restoring checkpoint %s in the guest: %w", req.ID, err)
	}
	return resp.CkptRestore, nil
}

// CkptManifest returns what a checkpoint holds.
func (c *Conn) CkptManifest(ctx context.Context, req runnerproto.CkptManifestRequest) (*runnerproto.CkptManifestResult, error) {
	resp, err := c.bgCall(ctx, &runnerproto.Request{CkptManifest: &req})
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint %s in the guest: %w", req.ID, err)
	}
	return resp.CkptManifest, nil
}
