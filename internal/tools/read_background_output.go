package tools

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

var readBackgroundOutputTool = &mcp.Tool{
	Name:  "read_background_output",
	Title: "Read a background process's output",
	Description: `Reads the output (stdout and stderr together, as written) of a process started with
run_shell_command's background: true, from an offset, and says whether it still runs or how it ended.
Without offset it continues where your last read of this id ended. The first 256 KiB and the last
1 MiB of the output are kept; a read in what was dropped between says how many bytes were skipped.
ports lists the TCP ports it listens on, each with the URL that reaches it from the person's machine.`,
	Annotations: readOnly,
}

// ReadBackgroundOutputParams is the input of read_background_output.
type ReadBackgroundOutputParams struct {
	ID       int    `json:"id" jsonschema:"the background_id run_shell_command returned"`
	Offset   *int64 `json:"offset,omitempty" jsonschema:"byte offset in the output to read from (default: where your last read of this id ended, 0 at first)"`
	MaxBytes *int   `json:"max_bytes,omitempty" jsonschema:"the most bytes to return (default 32768, at most 262144)"`
}

// ReadBackgroundOutputResult is the output of read_background_output.
type ReadBackgroundOutputResult struct {
	Output       string `json:"output" jsonschema:"the output from offset"`
	Offset       int64  `json:"offset" jsonschema:"the offset output starts at"`
	NextOffset   int64  `json:"next_offset" jsonschema:"the offset to read from next"`
	SkippedBytes int64  `json:"skipped_bytes,omitempty" jsonschema:"bytes between the offset asked for and offset that were dropped (only the first and last part of long output is kept)"`
	More         bool   `json:"more,omitempty" jsonschema:"true when more output is there already: read again from next_offset"`
	BackgroundStatus
}

// ReadBackgroundOutput reads a background process's output.
func (ts *Toolset) ReadBackgroundOutput(ctx context.Context, req *mcp.CallToolRequest, args ReadBackgroundOutputParams) (*mcp.CallToolResult, *ReadBackgroundOutputResult, error) {
	e, b, err := ts.background(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	max := b.lim.ReadDefault
	if args.MaxBytes != nil {
		if *args.MaxBytes < 1 || *args.MaxBytes > b.lim.ReadMax {
			return nil, nil, fmt.Errorf("max_bytes must be between 1 and %d, got %d", b.lim.ReadMax, *args.MaxBytes)
		}
		max = *args.MaxBytes
	}
	b.mu.Lock()
	off := b.next[args.ID]
	b.mu.Unlock()
	if args.Offset != nil {
		if *args.Offset < 0 {
			return nil, nil, fmt.Errorf("offset must not be negative, got %d", *args.Offset)
		}
		off = *args.Offset
	}
	r, err := e.ReadBackground(ctx, runnerproto.BgReadRequest{Group: b.group(), ID: args.ID, Offset: off, Max: max, Output: b.output()})
	if err != nil {
		return nil, nil, bgError(err)
	}
	if r.Unknown {
		return nil, nil, unknownBackground(args.ID)
	}
	b.mu.Lock()
	if len(b.next) < 4*b.lim.MaxKept || b.next[args.ID] != 0 {
		b.next[args.ID] = r.Next
	}
	b.mu.Unlock()
	res := &ReadBackgroundOutputResult{
		Output:           string(r.Data),
		Offset:           r.Offset,
		NextOffset:       r.Next,
		SkippedBytes:     r.Skipped,
		More:             r.Next < r.Status.OutputBytes,
		BackgroundStatus: backgroundStatus(r.Status),
	}
	res.Ports = b.seen(e, []runnerproto.BgStatus{r.Status}, false)[args.ID]
	return nil, res, nil
}
