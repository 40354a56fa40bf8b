package tools

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var checkpointTool = &mcp.Tool{
	Name:  "checkpoint",
	Title: "Checkpoint the working directory",
	Description: `Saves a snapshot of the staged copy of the working directory, in the VM, that restore_checkpoint
can put back exactly (file contents, modes, symlinks, directories). Take one before a risky change
(a large refactor, a code generator, a dependency upgrade). It is cheap: unchanged files are not
copied again. It covers what review sees: files ignored by .gitignore and every .git directory are
left out (git keeps its own history). The host is never changed by checkpoints.`,
	Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
}

// CheckpointParams is the input of checkpoint.
type CheckpointParams struct {
	Label string `json:"label,omitempty" jsonschema:"a short note saying what the snapshot is (at most 200 bytes)"`
}

// CheckpointResult is the output of checkpoint.
type CheckpointResult struct {
	CheckpointInfo
	Pruned []string `json:"pruned,omitempty" jsonschema:"older checkpoints removed to stay within the limits"`
}

// Checkpoint takes a checkpoint of the staged copy.
func (ts *Toolset) Checkpoint(ctx context.Context, req *mcp.CallToolRequest, args CheckpointParams) (*mcp.CallToolResult, *CheckpointResult, error) {
	if len(args.Label) > 200 || !utf8.ValidString(args.Label) {
		return nil, nil, fmt.Errorf("label: at most 200 bytes of UTF-8 text (got %d bytes)", len(args.Label))
	}
	sess, err := ts.checkpointSession(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	res, err := sess.Checkpoint(ctx, args.Label, false)
	if err != nil {
		return nil, nil, checkpointError(err)
	}
	return nil, &CheckpointResult{CheckpointInfo: checkpointInfo(*res.Checkpoint), Pruned: res.Pruned}, nil
}
