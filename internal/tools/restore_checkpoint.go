package tools

import (
	"context"
	"errors"
	"path"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var restoreCheckpointTool = &mcp.Tool{
	Name:  "restore_checkpoint",
	Title: "Restore a checkpoint",
	Description: `Puts the staged copy of the working directory back exactly as a checkpoint saved it: files
and directories made since are removed, changed files get their content and mode back, deleted ones
come back, symlinks are put back. Files ignored by .gitignore and .git directories are left as they
are. Only the copy in the VM changes (never the host); pending_changes then shows what is still
pending. Background processes keep running. Returns what was changed back.`,
	Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
}

// RestoreCheckpointParams is the input of restore_checkpoint.
type RestoreCheckpointParams struct {
	ID int `json:"id" jsonschema:"the checkpoint's id (from checkpoint or list_checkpoints)"`
}

// RestoredChange is one path a restore changed.
type RestoredChange struct {
	Path   string `json:"path" jsonschema:"absolute path"`
	Change string `json:"change" jsonschema:"removed (not in the checkpoint), created (put back), content, mode, symlink (target put back) or type (another kind of entry replaced)"`
}

// RestoreCheckpointResult is the output of restore_checkpoint.
type RestoreCheckpointResult struct {
	ID      int              `json:"id" jsonschema:"the checkpoint restored"`
	Changes []RestoredChange `json:"changes" jsonschema:"what was changed back"`
	Total   int              `json:"total" jsonschema:"how many paths were changed (changes may list fewer)"`
}

// RestoreCheckpoint restores the staged copy to a checkpoint.
func (ts *Toolset) RestoreCheckpoint(ctx context.Context, req *mcp.CallToolRequest, args RestoreCheckpointParams) (*mcp.CallToolResult, *RestoreCheckpointResult, error) {
	if args.ID < 1 {
		return nil, nil, errors.New("id is required: the checkpoint to restore, a number from checkpoint or list_checkpoints")
	}
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	sess, err := ts.checkpointSession(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	r, err := sess.RestoreCheckpoint(ctx, strconv.Itoa(args.ID), false)
	if err != nil {
		return nil, nil, checkpointError(err)
	}
	root := e.DefaultDir()
	res := &RestoreCheckpointResult{ID: args.ID, Changes: []RestoredChange{}, Total: r.Total}
	for _, c := range r.Changes {
		res.Changes = append(res.Changes, RestoredChange{Path: path.Join(root, string(c.Path)), Change: c.Kind})
	}
	return nil, res, nil
}
