package guest

import (
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Caps on checkpoint replies (the runner's, so the agent's, to forge).
const (
	maxCkptListed = 4096 // checkpoints in a list
	maxCkptText   = 1024 // bytes of a label
)

// checkCkptReply verifies a checkpoint reply against its request.
func checkCkptReply(req *runnerproto.Request, resp *runnerproto.Response) error {
	switch {
	case req.CkptCreate != nil:
		r := resp.CkptCreate
		if r == nil {
			return badReply("no checkpoint result")
		}
		if r.Checkpoint != nil {
			if err := checkCkptInfo(r.Checkpoint); err != nil {
				return err
			}
		}
		if len(r.Pruned) > maxCkptListed || len(r.Skipped) > req.CkptCreate.Limits.MaxEntries {
			return badReply("%d pruned and %d skipped paths", len(r.Pruned), len(r.Skipped))
		}
	case req.CkptList != nil:
		r := resp.CkptList
		if r == nil {
			return badReply("no checkpoint list")
		}
		if len(r.Checkpoints) > maxCkptListed {
			return badReply("%d checkpoints listed", len(r.Checkpoints))
		}
		for i := range r.Checkpoints {
			if err := checkCkptInfo(&r.Checkpoints[i]); err != nil {
				return err
			}
		}
	case req.CkptRestore != nil:
		r := resp.CkptRestore
		if r == nil {
			return badReply("no restore result")
		}
		if len(r.Changes) > req.CkptRestore.MaxChanges || r.Total < len(r.Changes) {
			return badReply("%d changes listed of %d, more than the %d asked for", len(r.Changes), r.Total, req.CkptRestore.MaxChanges)
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
	case req.CkptManifest != nil:
		r := resp.CkptManifest
		if r == nil {
			return badReply("no checkpoint manifest")
		}
		if r.Checkpoint != nil {
			if err := checkCkptInfo(r.Checkpoint); err != nil {
				return err
			}
		}
		if len(r.Entries) > req.CkptManifest.MaxEntries {
			return badReply("%d entries, more than the %d asked for", len(r.Entries), req.CkptManifest.MaxEntries)
		}
		for _, e := range r.Entries {
			if e.Type == tree.File && !isHexSHA256(e.Hash) {
				return badReply("a checkpoint file without a content hash (%q)", e.Path)
			}
		}
		return checkEntries(r.Entries)
	}
	return nil
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

// isCkptID says whether id is a checkpoint id: a decimal number of at most 9 digits, not 0.
func isCkptID(id string) bool {
	if id == "" || len(id) > 9 || id[0] == '0' {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
