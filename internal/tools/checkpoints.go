package tools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Checkpoints are snapshots of the staged copy (see internal/staging/checkpoint.go): the agent
// takes them, lists them and restores its copy to one; it never reaches the host by them.

// SessionSource gives the staged session a call works on (Staged; Unavailable says why not).
type SessionSource interface {
	Session(ctx context.Context, req *mcp.CallToolRequest) (*staging.Session, error)
}

// Session implements SessionSource.
func (u Unavailable) Session(context.Context, *mcp.CallToolRequest) (*staging.Session, error) {
	return nil, u.Err
}

// checkpointSession is the staged session of a checkpoint call.
func (ts *Toolset) checkpointSession(ctx context.Context, req *mcp.CallToolRequest) (*staging.Session, error) {
	src, ok := ts.src.(SessionSource)
	if !ok {
		return nil, errors.New("nothing is staged: this server works on a live mount of the host (an instance with mounts), which has no checkpoints; save copies of files with run_shell_command instead")
	}
	return src.Session(ctx, req)
}

// CheckpointInfo describes one checkpoint to the agent.
type CheckpointInfo struct {
	ID    int    `json:"id" jsonschema:"the checkpoint's id, for restore_checkpoint"`
	Label string `json:"label,omitempty" jsonschema:"the label it was given"`
	Auto  bool   `json:"auto,omitempty" jsonschema:"taken automatically, before a person applied a review or synced host edits into the copy"`
	Time  string `json:"time" jsonschema:"when it was taken (RFC 3339)"`
	Files int    `json:"files" jsonschema:"regular files it holds"`
	Bytes int64  `json:"bytes" jsonschema:"total size of those files"`
	// StoredBytes is what it added to the store.
	StoredBytes int64 `json:"stored_bytes" jsonschema:"bytes of new content it stored (unchanged files cost nothing)"`
}

func checkpointInfo(c runnerproto.CkptInfo) CheckpointInfo {
	id, _ := strconv.Atoi(c.ID) // checked: a number (guest/runnerclient/checkpoint.go)
	return CheckpointInfo{
		ID: id, Label: c.Label, Auto: c.Auto, Files: c.Files, Bytes: c.Bytes, StoredBytes: c.Stored,
		Time: time.UnixMilli(c.TimeMillis).UTC().Format(time.RFC3339),
	}
}

// checkpointError says what a failed checkpoint call means for the agent.
func checkpointError(err error) error {
	var refused *staging.CheckpointRefusedError
	switch {
	case errors.Is(err, guest.ErrNoRunner):
		return errors.New("checkpoints need the guest runner, which this server does not use (serve --no-runner, or it could not start: see the server's log); save copies of files with run_shell_command instead")
	case errors.As(err, &refused):
		return refused
	case errors.Is(err, staging.ErrUnknownCheckpoint):
		return fmt.Errorf("%v; call list_checkpoints to see them", err)
	case guest.IsConnectionError(err):
		return fmt.Errorf("the connection to the guest was lost (%v); retry: the next call reconnects", err)
	}
	return err
}
