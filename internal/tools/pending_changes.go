package tools

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

var pendingChangesTool = &mcp.Tool{
	Name:  "pending_changes",
	Title: "Pending changes (read-only)",
	Description: `Lists what you changed in the staged copy of the working directory that has not reached the
host yet, or shows the unified diff of one path. Changes reach the host only when a person reviews
and accepts them (limactl mcp review); this tool cannot apply anything.`,
	Annotations: readOnly,
}

// PendingSource serves pending_changes: the staged session.
type PendingSource interface {
	GuestChanges(ctx context.Context) (*staging.ChangeSet, error)
	PendingDiff(ctx context.Context, rel string) (string, error)
}

// PendingChangesParams is the input of pending_changes.
type PendingChangesParams struct {
	Path string `json:"path,omitempty" jsonschema:"An absolute path inside the working directory: show its unified diff instead of the list."`
}

// PendingChange is one changed path.
type PendingChange struct {
	Path string `json:"path" jsonschema:"absolute path"`
	Kind string `json:"kind" jsonschema:"added, modified, deleted, mode-changed, type-changed or symlink-changed"`
}

// PendingChangesResult is the output of pending_changes.
type PendingChangesResult struct {
	Changes []PendingChange `json:"changes" jsonschema:"the pending changes"`
	Diff    string          `json:"diff,omitempty" jsonschema:"the unified diff of the requested path"`
}

// PendingChanges lists the agent's pending changes.
func (ts *Toolset) PendingChanges(ctx context.Context, req *mcp.CallToolRequest, args PendingChangesParams) (*mcp.CallToolResult, *PendingChangesResult, error) {
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if ts.pending == nil {
		return nil, nil, errors.New("nothing is staged: this server works on a live mount of the host (an instance with mounts), so there is nothing pending")
	}
	root := e.DefaultDir()
	res := &PendingChangesResult{Changes: []PendingChange{}}
	if args.Path != "" {
		if err := e.Check(args.Path); err != nil {
			return nil, nil, err
		}
		p := path.Clean(args.Path)
		rel, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/")
		if !ok {
			return nil, nil, fmt.Errorf("%s is outside the working directory %s: only its changes are tracked", args.Path, root)
		}
		d, err := ts.pending.PendingDiff(ctx, rel)
		if errors.Is(err, staging.ErrNotPending) {
			return nil, nil, fmt.Errorf("%s has no pending change; call pending_changes without path to list them", args.Path)
		}
		if err != nil {
			return nil, nil, err
		}
		res.Diff = d
	}
	cs, err := ts.pending.GuestChanges(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range cs.Changes {
		res.Changes = append(res.Changes, PendingChange{Path: path.Join(root, string(c.Path)), Kind: string(c.Kind)})
	}
	return nil, res, nil
}
