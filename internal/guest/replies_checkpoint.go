package guest

import (
	"encoding/json"
	"path"
	"strings"
	"unicode/utf8"

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
		refused := r.StoreFull || r.TooManyEntries || r.RootMissing
		if (r.Checkpoint != nil) == refused {
			return badReply("a checkpoint result that says both or neither of taken (%v) and refused (%v)", r.Checkpoint != nil, refused)
		}
		if r.Checkpoint != nil {
			if err := checkCkptInfo(r.Checkpoint); err != nil {
				return err
			}
			if r.Checkpoint.Label != asSent(req.CkptCreate.Label) || r.Checkpoint.Auto != req.CkptCreate.Auto {
				return badReply("checkpoint %s is not the one asked for (label %.40q, automatic %v)", r.Checkpoint.ID, r.Checkpoint.Label, r.Checkpoint.Auto)
			}
		}
		if len(r.Pruned) > maxCkptListed || len(r.Skipped) > req.CkptCreate.Limits.MaxEntries {
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
	case req.CkptList != nil:
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
	case req.CkptRestore != nil:
		r := resp.CkptRestore
		if r == nil {
			return badReply("no restore result")
		}
		if (r.Unknown || r.RootMissing) && (len(r.Changes) > 0 || r.Total != 0) {
			return badReply("changes to a tree or a checkpoint said not to exist")
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
		if r.Checkpoint.ID != req.CkptManifest.ID {
			return badReply("the manifest of checkpoint %s for checkpoint %.20q", r.Checkpoint.ID, req.CkptManifest.ID)
		}
		if !isGuestPath(r.ObjectDir) || r.ObjectDir == "/" {
			return badReply("a checkpoint's objects in %.80q, not an absolute path", r.ObjectDir)
		}
		if len(r.Entries) > req.CkptManifest.MaxEntries {
			return badReply("%d entries, more than the %d asked for", len(r.Entries), req.CkptManifest.MaxEntries)
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

// asSent is s as the runner received it: JSON makes invalid UTF-8 into U+FFFD.
func asSent(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &s)
	return s
}

// isRelName says whether n is a clean relative path.
func isRelName(n tree.Name) bool {
	p := string(n)
	return p != "" && len(p) <= maxGuestPath && !strings.HasPrefix(p, "/") && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../") && !strings.ContainsRune(p, 0)
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
