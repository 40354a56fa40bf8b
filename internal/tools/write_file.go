package tools

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/tools/env"
)

var writeFileTool = &mcp.Tool{
	Name:        "write_file",
	Title:       "Write file",
	Description: `Writes content to a specified file. If the file exists, it will be overwritten. If the file doesn't exist, it (and any necessary parent directories) will be created.`,
	Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
}

// WriteFileParams is the input of write_file (as in Lima's server).
type WriteFileParams struct {
	Path    string `json:"path" jsonschema:"The absolute path to the file to write to."`
	Content string `json:"content" jsonschema:"The content to write into the file."`
}

// WriteFileResult is empty, as in Lima's server.
type WriteFileResult struct{}

// WriteFile writes a file of the guest, creating its parent directories.
func (ts *Toolset) WriteFile(ctx context.Context, req *mcp.CallToolRequest, args WriteFileParams) (*mcp.CallToolResult, *WriteFileResult, error) {
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := e.Check(args.Path); err != nil {
		return nil, nil, err
	}
	if len(args.Content) > ts.lim.WriteBytes {
		return nil, nil, fmt.Errorf("content is %d bytes, more than the %d-byte limit of write_file; write a smaller file, or generate the data with run_shell_command", len(args.Content), ts.lim.WriteBytes)
	}
	if err := writeGuestFile(ctx, e, args.Path, []byte(args.Content), "write_file"); err != nil {
		return nil, nil, err
	}
	return nil, &WriteFileResult{}, nil
}

// writeGuestFile writes a guest file for a tool (replaced whole through the runner; see
// guest.Conn.WriteFile), creating its parent directories, and words the errors for the agent.
func writeGuestFile(ctx context.Context, e *env.Env, hostPath string, data []byte, tool string) error {
	return writeError(hostPath, e.WriteFile(ctx, hostPath, data), tool)
}

// writeError words the error of a write (or of an edit, whose read errors fall through to
// fsError) for the agent.
func writeError(hostPath string, err error, tool string) error {
	var errno syscall.Errno
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EISDIR):
		return isADirectory(hostPath)
	case errors.Is(err, guest.ErrNotRegular):
		return fmt.Errorf("not a regular file: %s; %s works on regular files only: use run_shell_command for special files", hostPath, tool)
	case errors.As(err, &errno) && (errno == syscall.ENOSPC || errno == syscall.EDQUOT):
		return fmt.Errorf("the guest's disk is full (%v): %s was left as it was. Free space in the guest (run_shell_command with df -h, then remove build output or caches) and retry", err, hostPath)
	}
	return fsError(hostPath, err)
}
