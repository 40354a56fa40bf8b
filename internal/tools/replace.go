package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
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
	// Stat first: a fifo would block the guest's sftp server at open, and a device (a link to
	// /dev/zero) reports no size and never ends.
	fi, err := e.Stat(ctx, args.FilePath)
	if errors.Is(err, fs.ErrNotExist) && args.OldString == "" {
		if err := writeGuestFile(ctx, e, args.FilePath, []byte(args.NewString), "replace"); err != nil {
			return nil, nil, err
		}
		return nil, &ReplaceResult{Replacements: 1, Created: true}, nil
	}
	if err != nil {
		return nil, nil, fsError(args.FilePath, err)
	}
	if fi.IsDir() {
		return nil, nil, isADirectory(args.FilePath)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(args.FilePath, fi.Mode(), "replace")
	}
	if fi.Size() > int64(ts.lim.WriteBytes) {
		return nil, nil, fmt.Errorf("%s is %d bytes, more than the %d-byte limit of replace; edit it with run_shell_command (sed, patch)", args.FilePath, fi.Size(), ts.lim.WriteBytes)
	}
	// Read the file the path leads to, bounded and without blocking: the agent may swap it for
	// a fifo or let it grow between the stat and the read.
	data, err := e.ReadFile(ctx, args.FilePath, int64(ts.lim.WriteBytes))
	switch {
	case errors.Is(err, guest.ErrTooLarge):
		return nil, nil, fmt.Errorf("%s grew past the %d-byte limit of replace while it was read; edit it with run_shell_command (sed, patch)", args.FilePath, ts.lim.WriteBytes)
	case errors.Is(err, guest.ErrNotRegular):
		return nil, nil, fmt.Errorf("not a regular file: %s (it changed while it was read); replace works on regular files only: use run_shell_command for special files", args.FilePath)
	case err != nil:
		return nil, nil, fsError(args.FilePath, err)
	}
	if isBinary(data) {
		return nil, nil, fmt.Errorf("%s is a binary file; replace edits text files only", args.FilePath)
	}
	text := string(data)
	if args.OldString == "" {
		return nil, nil, fmt.Errorf("old_string is empty but %s already exists; pass the exact text to replace, or use write_file to overwrite the whole file", args.FilePath)
	}
	n := strings.Count(text, args.OldString)
	switch {
	case n == 0:
		return nil, nil, fmt.Errorf("old_string was not found in %s: nothing was changed. Read the file again and copy the exact text, including whitespace and indentation", args.FilePath)
	case n != want:
		return nil, nil, fmt.Errorf("old_string occurs %d times in %s but expected_replacements is %d: nothing was changed. Add surrounding lines to old_string to make it unique, or set expected_replacements to %d to replace them all", n, args.FilePath, want, n)
	}
	if err := writeGuestFile(ctx, e, args.FilePath, []byte(strings.ReplaceAll(text, args.OldString, args.NewString)), "replace"); err != nil {
		return nil, nil, err
	}
	return nil, &ReplaceResult{Replacements: n}, nil
}
