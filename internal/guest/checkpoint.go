package guest

import (
	"context"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Checkpoints of a staged copy are taken and restored by the runner in the guest (see
// internal/runnerproto/checkpoint.go): nothing of the content crosses the link.

// CkptCreate takes a checkpoint (ErrNoRunner without the runner).
func (c *Conn) CkptCreate(ctx context.Context, req runnerproto.CkptCreateRequest) (*runnerproto.CkptCreateResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.CkptCreateResult, error) { return r.CkptCreate(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("taking a checkpoint in the guest: %w", err)
	}
	return res, nil
}

// CkptList lists a session's checkpoints.
func (c *Conn) CkptList(ctx context.Context, session string) (*runnerproto.CkptListResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.CkptListResult, error) {
		return r.CkptList(ctx, runnerproto.CkptListRequest{Session: session})
	})
	if err != nil {
		return nil, fmt.Errorf("listing the checkpoints in the guest: %w", err)
	}
	return res, nil
}

// CkptRestore restores a tree to a checkpoint.
func (c *Conn) CkptRestore(ctx context.Context, req runnerproto.CkptRestoreRequest) (*runnerproto.CkptRestoreResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.CkptRestoreResult, error) { return r.CkptRestore(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("restoring checkpoint %s in the guest: %w", req.ID, err)
	}
	return res, nil
}

// CkptManifest returns what a checkpoint holds.
func (c *Conn) CkptManifest(ctx context.Context, req runnerproto.CkptManifestRequest) (*runnerproto.CkptManifestResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.CkptManifestResult, error) { return r.CkptManifest(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint %s in the guest: %w", req.ID, err)
	}
	return res, nil
}

// CkptSeed gives a fork's store what makes its first checkpoint cheap (a runner that does not
// know the request answers an error: the first checkpoint then reads every file).
func (c *Conn) CkptSeed(ctx context.Context, req runnerproto.CkptSeedRequest) (*runnerproto.CkptSeedResult, error) {
	res, err := viaRunner(ctx, c, func(r *runnerclient.Client) (*runnerproto.CkptSeedResult, error) { return r.CkptSeed(ctx, req) })
	if err != nil {
		return nil, fmt.Errorf("seeding the fork's checkpoint store in the guest: %w", err)
	}
	return res, nil
}
