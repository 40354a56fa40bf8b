package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

var replaceTool = &mcp.Tool{
	Name:  "replace",
	Title: "Replace text in a file",
	Description: `Replaces text within a file. By default replaces exactly one occurrence of old_string; set
expected_replacements to replace that many (it fails when the count differs, so nothing changes
by surprise). old_string must match the file exactly, including whitespace and indentation:
read the file first. An empty old_string creates a new file with new_string as its content.`,
	Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
}

// ReplaceParams is the input of replace.
type ReplaceParams struct {
	FilePath             string `json:"file_path" jsonschema:"The absolute path to the file to modify."`
	OldString            string `json:"old_string" jsonschema:"The exact text to replace. Include enough surrounding lines to make it unique."`
	NewString            string `json:"new_string" jsonschema:"The text to replace old_string with."`
	ExpectedReplacements *int   `json:"expected_replacements,omitempty" jsonschema:"Number of occurrences to replace (default 1)."`
}

// ReplaceResult is the output of replace.
type ReplaceResult struct {
	Replacements int  `json:"replacements" jsonschema:"number of occurrences replaced"`
	Created      bool `json:"created,omitempty" jsonschema:"true when the file was created"`
}

// Replace edits a file of the guest.
func (ts *Toolset) Replace(ctx context.Context, req *mcp.CallToolRequest, args ReplaceParams) (*mcp.CallToolResult, *ReplaceResult, error) {
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := e.Check(args.FilePath); err != nil {
		return nil, nil, err
	}
	want := 1
	if args.ExpectedReplacements != nil {
		want = *args.ExpectedReplacements
		if want < 1 {
			return nil, nil, fmt.Errorf("expected_replacements must be 1 or more, got %d", want)
		}
	}
	if args.OldString == args.NewString {
		return nil, nil, errors.New("old_string and new_string are the same: nothing to change")
	}
	if len(args.NewString) > ts.lim.WriteBytes {
		return nil, nil, fmt.Errorf("new_string is %d bytes, more than the %d-byte limit", len(args.NewString), ts.lim.WriteBytes)
	}
	// One request through the runner: read the file the path leads to (without blocking on a
	// special file the agent swapped in), count, and write only if its content is still the one
	// counted (runnerproto.EditRequest).
	r, err := e.Edit(ctx, runnerproto.EditRequest{Path: args.FilePath, Old: args.OldString, New: args.NewString, Count: want, MaxBytes: int64(ts.lim.WriteBytes)})
	if err != nil {
		return nil, nil, writeError(args.FilePath, err, "replace")
	}
	switch {
	case r.Created:
		return nil, &ReplaceResult{Replacements: 1, Created: true}, nil
	case r.Replaced > 0:
		return nil, &ReplaceResult{Replacements: r.Replaced}, nil
	case r.Missing:
		return nil, nil, fsError(args.FilePath, fs.ErrNotExist)
	case r.NotRegular == tree.Dir:
		return nil, nil, isADirectory(args.FilePath)
	case r.NotRegular != "":
		return nil, nil, notRegular(args.FilePath, fs.FileMode(r.Mode), "replace")
	case r.TooLarge && r.Size > int64(ts.lim.WriteBytes):
		return nil, nil, fmt.Errorf("%s is %d bytes, more than the %d-byte limit of replace; edit it with run_shell_command (sed, patch)", args.FilePath, r.Size, ts.lim.WriteBytes)
	case r.TooLarge:
		return nil, nil, fmt.Errorf("%s grew past the %d-byte limit of replace while it was read; edit it with run_shell_command (sed, patch)", args.FilePath, ts.lim.WriteBytes)
	case r.Binary:
		return nil, nil, fmt.Errorf("%s is a binary file; replace edits text files only", args.FilePath)
	case r.Exists:
		return nil, nil, fmt.Errorf("old_string is empty but %s already exists; pass the exact text to replace, or use write_file to overwrite the whole file", args.FilePath)
	case r.Found == 0:
		return nil, nil, fmt.Errorf("old_string was not found in %s: nothing was changed. Read the file again and copy the exact text, including whitespace and indentation", args.FilePath)
	case r.Found != want:
		return nil, nil, fmt.Errorf("old_string occurs %d times in %s but expected_replacements is %d: nothing was changed. Add surrounding lines to old_string to make it unique, or set expected_replacements to %d to replace them all", r.Found, args.FilePath, want, r.Found)
	case r.Changed:
		return nil, nil, fmt.Errorf("%s changed while replace was editing it (another process wrote it): nothing was changed. Read the file again and retry", args.FilePath)
	}
	return nil, nil, fmt.Errorf("%s: the guest did not say how the edit went; read the file to see whether it changed", args.FilePath)
}
