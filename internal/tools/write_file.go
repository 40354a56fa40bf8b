package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pkg/sftp"
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
	ws, err := ts.workspace(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	guestPath, err := ws.ToGuest(args.Path)
	if err != nil {
		return nil, nil, err
	}
	if len(args.Content) > ts.lim.WriteBytes {
		return nil, nil, fmt.Errorf("content is %d bytes, more than the %d-byte limit of write_file; write a smaller file, or generate the data with run_shell_command", len(args.Content), ts.lim.WriteBytes)
	}
	sc, err := ts.conn.SFTP(ctx)
	if err != nil {
		return nil, nil, err
	}
	// A fifo would block the open (and the guest's sftp server with it) until a reader came.
	if fi, err := sc.Stat(guestPath); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil, nil, notRegular(args.Path, fi.Mode(), "write_file")
	}
	if err := writeFile(sc, guestPath, []byte(args.Content)); err != nil {
		return nil, nil, fsError(args.Path, err)
	}
	return nil, &WriteFileResult{}, nil
}

// writeFile writes data to p in place (keeping the mode, owner and links of an existing
// file), creating missing parent directories. The common case costs three round trips (open,
// write, close); what failed is looked into only on failure.
func writeFile(sc *sftp.Client, p string, data []byte) error {
	f, err := sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		if fi, serr := sc.Stat(p); serr == nil && fi.IsDir() {
			return fmt.Errorf("is a directory; pass the path of a file")
		}
		dir := path.Dir(p)
		if _, serr := sc.Stat(dir); !errors.Is(serr, fs.ErrNotExist) {
			return err
		}
		if err := sc.MkdirAll(dir); err != nil {
			return err
		}
		if f, err = sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC); err != nil {
			return err
		}
	}
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
