package tools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var listCheckpointsTool = &mcp.Tool{
	Name:  "list_checkpoints",
	Title: "List checkpoints",
	Description: `Lists the snapshots of the staged copy of the working directory, oldest first: the ones you took
with checkpoint, and the automatic ones taken before a person applied a review or synced host edits
into the copy. Restore one with restore_checkpoint.`,
	Annotations: readOnly,
}

// ListCheckpointsParams is the input of list_checkpoints (none).
type ListCheckpointsParams struct{}

// ListCheckpointsResult is the output of list_checkpoints.
type ListCheckpointsResult struct {
	Checkpoints []CheckpointInfo `json:"checkpoints" jsonschema:"the checkpoints, oldest first"`
	StoreBytes  int64            `json:"store_bytes" jsonschema:"bytes the checkpoints take in the VM"`
}

// ListCheckpoints lists the session's checkpoints.
func (ts *Toolset) ListCheckpoints(ctx context.Context, req *mcp.CallToolRequest, _ ListCheckpointsParams) (*mcp.CallToolResult, *ListCheckpointsResult, error) {
	sess, err := ts.checkpointSession(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	l, err := sess.Checkpoints(ctx)
	if err != nil {
		return nil, nil, checkpointError(err)
	}
	res := &ListCheckpointsResult{Checkpoints: []CheckpointInfo{}, StoreBytes: l.StoreBytes}
	for _, c := range l.Checkpoints {
		res.Checkpoints = append(res.Checkpoints, checkpointInfo(c))
	}
	return nil, res, nil
}
