package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

var readFileTool = &mcp.Tool{
	Name:  "read_file",
	Title: "Read file",
	Description: `Reads and returns the content of a specified file.
For text files, offset and limit select lines (0-based); a long file is returned in parts, and the
result says which lines it holds and the offset to continue from. Images (PNG, JPEG, GIF, WebP)
come back as image content. Other binary files are described, not dumped.`,
	Annotations: readOnly,
}

// ReadFileParams is the input of read_file: Lima's, plus offset and limit.
type ReadFileParams struct {
	Path   string `json:"path" jsonschema:"The absolute path to the file to read."`
	Offset *int   `json:"offset,omitempty" jsonschema:"For text files, the 0-based line number to start reading from."`
	Limit  *int   `json:"limit,omitempty" jsonschema:"For text files, the maximum number of lines to read (default 2000)."`
}

// ReadFileResult is the output of read_file: Lima's content, plus what part of the file it is.
type ReadFileResult struct {
	Content    string `json:"content" jsonschema:"The content of the file (for a part of a text file, those lines only)."`
	Truncated  bool   `json:"truncated,omitempty" jsonschema:"true when content is only part of the file"`
	StartLine  int    `json:"start_line,omitempty" jsonschema:"0-based number of the first line in content"`
	EndLine    int    `json:"end_line,omitempty" jsonschema:"0-based number of the line after the last one in content: the offset to continue from"`
	TotalLines int    `json:"total_lines,omitempty" jsonschema:"number of lines in the file"`
	Size       int64  `json:"size,omitempty" jsonschema:"size of the file in bytes"`
	MIMEType   string `json:"mime_type,omitempty" jsonschema:"for images and binary files, the detected type"`
	Binary     bool   `json:"binary,omitempty" jsonschema:"true for a binary file, whose content is not returned"`
	Note       string `json:"note,omitempty" jsonschema:"what was left out and how to read it"`
}

// imageTypes are the image types returned as MCP image content.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// maxScan bounds how much of a file read_file reads to find lines.
const maxScan = 64 << 20

// ReadFile reads a file of the guest.
func (ts *Toolset) ReadFile(ctx context.Context, req *mcp.CallToolRequest, args ReadFileParams) (*mcp.CallToolResult, *ReadFileResult, error) {
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := e.Check(args.Path); err != nil {
		return nil, nil, err
	}
	offset, limit := 0, ts.lim.ReadLines
	if args.Offset != nil {
		if *args.Offset < 0 {
			return nil, nil, fmt.Errorf("offset must be 0 or more (a 0-based line number), got %d", *args.Offset)
		}
		offset = *args.Offset
	}
	if args.Limit != nil {
		if *args.Limit <= 0 {
			return nil, nil, fmt.Errorf("limit must be 1 or more lines, got %d", *args.Limit)
		}
		limit = *args.Limit
	}
	// One request through the runner: the file the path leads to is looked at, opened without
	// blocking (the agent may swap it for a fifo or a link to a device at any time) and checked
	// again after the open; what is not a regular file is named, not read.
	f, err := e.Open(ctx, args.Path)
	var nr *guest.NotRegularError
	switch {
	case errors.As(err, &nr) && nr.IsDir():
		return nil, nil, isADirectory(args.Path)
	case errors.As(err, &nr):
		return nil, nil, fmt.Errorf("not a regular file: %s (%s); read_file reads regular files only", args.Path, kindOf(nr))
	case err != nil:
		return nil, nil, fsError(args.Path, err)
	}
	defer f.Close()
	size := f.Size()
	data, err := io.ReadAll(io.LimitReader(f, maxScan))
	if errors.Is(err, guest.ErrNotRegular) {
		return nil, nil, fmt.Errorf("not a regular file: %s (it changed while it was read); read_file reads regular files only", args.Path)
	}
	if err != nil {
		return nil, nil, fsError(args.Path, err)
	}
	res := &ReadFileResult{Size: size}

	mime := http.DetectContentType(data)
	if imageTypes[mime] {
		res.MIMEType = mime
		if len(data) > ts.lim.ImageBytes {
			res.Binary = true
			res.Content = fmt.Sprintf("[image %s, %d bytes: larger than the %d-byte limit for image content; not returned]", mime, size, ts.lim.ImageBytes)
			res.Note = "Use run_shell_command to inspect or shrink it (for example with `file` or an image tool)."
			return nil, res, nil
		}
		res.Content = fmt.Sprintf("[image %s, %d bytes, returned as image content]", mime, size)
		text, err := json.Marshal(res)
		if err != nil {
			return nil, nil, err
		}
		// The result's JSON as text too, as for every other result.
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: string(text)},
			&mcp.ImageContent{Data: data, MIMEType: mime},
		}}, res, nil
	}
	if isBinary(data) {
		res.Binary = true
		res.MIMEType = mime
		if mime == "text/plain; charset=utf-8" {
			res.MIMEType = "application/octet-stream"
		}
		res.Content = fmt.Sprintf("[binary file %s: %d bytes, %s; content not shown]", path.Base(args.Path), size, res.MIMEType)
		res.Note = "Use run_shell_command with `file`, `xxd | head` or `strings` to inspect it."
		return nil, res, nil
	}
	ts.selectLines(res, data, offset, limit)
	if int64(len(data)) < size {
		res.Truncated = true
		res.Note = strings.TrimSpace(res.Note + fmt.Sprintf(" Only the first %d bytes of this %d-byte file were scanned; use run_shell_command (sed -n, tail) for the rest.", len(data), size))
	}
	return nil, res, nil
}

// selectLines puts lines [offset, offset+limit) of data into res, within the byte limit.
func (ts *Toolset) selectLines(res *ReadFileResult, data []byte, offset, limit int) {
	total := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		total++
	}
	res.TotalLines = total
	if offset == 0 && total <= limit && len(data) <= ts.lim.ReadBytes {
		res.Content, res.EndLine = string(data), total
		return
	}
	if offset >= total && total > 0 || offset > 0 && total == 0 {
		res.StartLine, res.EndLine, res.Truncated = offset, offset, true
		res.Note = fmt.Sprintf("offset %d is past the end of the file, which has %d lines.", offset, total)
		return
	}
	// Skip to the offset.
	rest := data
	for i := 0; i < offset; i++ {
		j := bytes.IndexByte(rest, '\n')
		rest = rest[j+1:]
	}
	var b strings.Builder
	line := offset
	cut := false
	for line < total && line-offset < limit {
		j := bytes.IndexByte(rest, '\n')
		next := rest
		if j >= 0 {
			next = rest[:j+1]
		}
		if b.Len()+len(next) > ts.lim.ReadBytes {
			if b.Len() == 0 { // one huge line: return its beginning
				b.Write(next[:ts.lim.ReadBytes])
				line++
			}
			cut = true
			break
		}
		b.Write(next)
		rest = rest[len(next):]
		line++
	}
	res.Content, res.StartLine, res.EndLine = b.String(), offset, line
	if offset > 0 || line < total || cut {
		res.Truncated = true
		why := ""
		if cut {
			why = fmt.Sprintf(" (stopped at the %d-byte limit)", ts.lim.ReadBytes)
		}
		res.Note = fmt.Sprintf("Showing lines %d-%d of %d%s.", offset+1, line, total, why)
		if line < total {
			res.Note += fmt.Sprintf(" Call read_file with offset=%d to read on.", line)
		}
	}
}

// isBinary says whether data looks like a binary file: a NUL byte, or invalid UTF-8, near
// its beginning (tree.NotText, which the runner's edit asks too).
func isBinary(data []byte) bool { return tree.NotText(data) }
