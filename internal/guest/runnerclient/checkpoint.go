package runnerclient

import (
	"context"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Checkpoints of a staged copy are taken and restored by the runner in the guest (see
// internal/runnerproto/checkpoint.go): nothing of the content crosses the link.

// Caps on checkpoint replies (the runner's, so the agent's, to forge).
const (
	maxCkptListed = 4096 // checkpoints in a list
	maxCkptText   = 1024 // bytes of a label
)

// CkptCreate takes a checkpoint.
func (c *Client) CkptCreate(ctx context.Context, q runnerproto.CkptCreateRequest) (*runnerproto.CkptCreateResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{CkptCreate: &q}, func(resp *runnerproto.Response) error { return checkCkptCreate(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.CkptCreate, nil
}

// checkCkptCreate is CkptCreate's post-condition: taken or refused, never both, the checkpoint asked for.
func checkCkptCreate(q *runnerproto.CkptCreateRequest, resp *runnerproto.Response) error {
	r := resp.CkptCreate
	if r == nil {
		return badReply("no checkpoint result")
	}
	refused := r.StoreFull || r.TooManyEntries || r.RootMissing
	if (r.Checkpoint != nil) == refused {
		return badReply("a checkpoint result that says both or neither of taken (%v) and refused (%v)", r.Checkpoint != nil, refused)
	}
	if r.Checkpoint != nil {
		if err := checkCkptInfo(r.Checkpoint); err != nil {
			return err
		}
		if r.Checkpoint.Label != asSent(q.Label) || r.Checkpoint.Auto != q.Auto {
			return badReply("checkpoint %s is not the one asked for (label %.40q, automatic %v)", r.Checkpoint.ID, r.Checkpoint.Label, r.Checkpoint.Auto)
		}
	}
	if len(r.Pruned) > maxCkptListed || len(r.Skipped) > q.Limits.MaxEntries {
		return badReply("%d pruned and %d skipped paths", len(r.Pruned), len(r.Skipped))
	}
	if r.StoreBytes < 0 || r.Reused < 0 {
		return badReply("a store of %d bytes, %d files reused", r.StoreBytes, r.Reused)
	}
	for _, id := range r.Pruned {
		if !isCkptID(id) {
			return badReply("a pruned checkpoint id %.20q", id)
		}
	}
	for _, p := range r.Skipped {
		if !isRelName(p) {
			return badReply("a skipped path that is not a clean relative path (%.80q)", p)
		}
	}
	return nil
}

// CkptList lists a session's checkpoints.
func (c *Client) CkptList(ctx context.Context, q runnerproto.CkptListRequest) (*runnerproto.CkptListResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{CkptList: &q}, checkCkptList)
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.CkptList, nil
}

// checkCkptList is CkptList's post-condition: checkpoints that can be, each once.
func checkCkptList(resp *runnerproto.Response) error {
	r := resp.CkptList
	if r == nil {
		return badReply("no checkpoint list")
	}
	if len(r.Checkpoints) > maxCkptListed || r.StoreBytes < 0 {
		return badReply("%d checkpoints listed, a store of %d bytes", len(r.Checkpoints), r.StoreBytes)
	}
	seen := make(map[string]bool, len(r.Checkpoints))
	for i := range r.Checkpoints {
		if err := checkCkptInfo(&r.Checkpoints[i]); err != nil {
			return err
		}
		if seen[r.Checkpoints[i].ID] {
			return badReply("checkpoint %s listed twice", r.Checkpoints[i].ID)
		}
		seen[r.Checkpoints[i].ID] = true
	}
	return nil
}

// CkptRestore restores a tree to a checkpoint.
func (c *Client) CkptRestore(ctx context.Context, q runnerproto.CkptRestoreRequest) (*runnerproto.CkptRestoreResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{CkptRestore: &q}, func(resp *runnerproto.Response) error { return checkCkptRestore(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.CkptRestore, nil
}

// checkCkptRestore is CkptRestore's post-condition: no more changes than asked for, each of a known kind on a clean relative path.
func checkCkptRestore(q *runnerproto.CkptRestoreRequest, resp *runnerproto.Response) error {
	r := resp.CkptRestore
	if r == nil {
		return badReply("no restore result")
	}
	if (r.Unknown || r.RootMissing) && (len(r.Changes) > 0 || r.Total != 0) {
		return badReply("changes to a tree or a checkpoint said not to exist")
	}
	if len(r.Changes) > q.MaxChanges || r.Total < len(r.Changes) {
		return badReply("%d changes listed of %d, more than the %d asked for", len(r.Changes), r.Total, q.MaxChanges)
	}
	es := make([]tree.Entry, 0, len(r.Changes))
	for _, c := range r.Changes {
		switch c.Kind {
		case runnerproto.CkptRemoved, runnerproto.CkptCreated, runnerproto.CkptContent, runnerproto.CkptMode, runnerproto.CkptRelinked, runnerproto.CkptRetyped:
		default:
			return badReply("a change of unknown kind %.40q", c.Kind)
		}
		es = append(es, tree.Entry{Path: c.Path, Type: tree.File})
	}
	return checkEntries(es)
}

// CkptManifest returns what a checkpoint holds.
func (c *Client) CkptManifest(ctx context.Context, q runnerproto.CkptManifestRequest) (*runnerproto.CkptManifestResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{CkptManifest: &q}, func(resp *runnerproto.Response) error { return checkCkptManifest(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.CkptManifest, nil
}

// checkCkptManifest is CkptManifest's post-condition: the checkpoint asked for, its objects' directory, entries that can be.
func checkCkptManifest(q *runnerproto.CkptManifestRequest, resp *runnerproto.Response) error {
	r := resp.CkptManifest
	if r == nil {
		return badReply("no checkpoint manifest")
	}
	if r.Unknown {
		if r.Checkpoint != nil || len(r.Entries) > 0 {
			return badReply("the content of a checkpoint said not to exist")
		}
		return nil
	}
	// The host reads the checkpoint's time and id (review --since) and its objects
	// (ObjectDir/HASH): a manifest without them is no answer.
	if r.Checkpoint == nil {
		return badReply("a checkpoint manifest without its checkpoint")
	}
	if err := checkCkptInfo(r.Checkpoint); err != nil {
		return err
	}
	if r.Checkpoint.ID != q.ID {
		return badReply("the manifest of checkpoint %s for checkpoint %.20q", r.Checkpoint.ID, q.ID)
	}
	if !isGuestPath(r.ObjectDir) || r.ObjectDir == "/" {
		return badReply("a checkpoint's objects in %.80q, not an absolute path", r.ObjectDir)
	}
	if len(r.Entries) > q.MaxEntries {
		return badReply("%d entries, more than the %d asked for", len(r.Entries), q.MaxEntries)
	}
	for _, e := range r.Entries {
		if e.Type == tree.File && !isHexSHA256(e.Hash) {
			return badReply("a checkpoint file without a content hash (%q)", e.Path)
		}
		if len(e.Target) > maxGuestPath {
			return badReply("a link target of %d bytes", len(e.Target))
		}
	}
	return checkEntries(r.Entries)
}

func checkCkptInfo(c *runnerproto.CkptInfo) error {
	if !isCkptID(c.ID) || len(c.Label) > maxCkptText {
		return badReply("a checkpoint id %.20q or a label of %d bytes", c.ID, len(c.Label))
	}
	if c.Files < 0 || c.Dirs < 0 || c.Symlinks < 0 || c.Bytes < 0 || c.Stored < 0 {
		return badReply("negative counts for checkpoint %.40q", c.ID)
	}
	return nil
}

// CkptSeed gives a fork's store its seed.
func (c *Client) CkptSeed(ctx context.Context, q runnerproto.CkptSeedRequest) (*runnerproto.CkptSeedResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{CkptSeed: &q}, func(resp *runnerproto.Response) error {
		r := resp.CkptSeed
		if r == nil {
			return badReply("no seed result")
		}
		if r.Seeded < 0 || r.Files < 0 || r.Seeded > r.Files || (r.Checkpoint != "" && !isCkptID(r.Checkpoint)) {
			return badReply("a seed of %d of %d files from checkpoint %.20q", r.Seeded, r.Files, r.Checkpoint)
		}
		return nil
	})
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.CkptSeed, nil
}
