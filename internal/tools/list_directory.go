package tools

import (
	"context"
	"errors"
	"io/fs"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

var listDirectoryTool = &mcp.Tool{
	Name:        "list_directory",
	Title:       "List directory",
	Description: `Lists the names of files and subdirectories directly within a specified directory path.`,
	Annotations: readOnly,
}

// ListDirectoryParams is the input of list_directory (as in Lima's server).
type ListDirectoryParams struct {
	Path string `json:"path" jsonschema:"The absolute path to the directory to list."`
}

// ListDirectoryResultEntry is similar to [io/fs.FileInfo].
type ListDirectoryResultEntry struct {
	Name       string       `json:"name" jsonschema:"base name of the file"`
	Size       *int64       `json:"size,omitempty" jsonschema:"length in bytes for regular files; system-dependent for others"`
	Mode       *fs.FileMode `json:"mode,omitempty" jsonschema:"file mode bits"`
	ModTime    *time.Time   `json:"time,omitempty" jsonschema:"modification time"`
	IsDir      *bool        `json:"is_dir,omitempty" jsonschema:"true for a directory"`
	LinkTarget string       `json:"link_target,omitempty" jsonschema:"for a symbolic link, what it points to"`
}

// ListDirectoryResult is the output of list_directory.
type ListDirectoryResult struct {
	Entries []ListDirectoryResultEntry `json:"entries" jsonschema:"The directory content entries."`
	// Truncated is ours (Lima's server lists everything, however large).
	Truncated bool `json:"truncated,omitempty" jsonschema:"true when the directory holds more entries than the ones listed (at most 10000, sorted by name); use glob with a pattern to find the others"`
}

// maxListEntries bounds one listing: a directory of millions of entries costs neither the guest,
// the host nor the agent's context more than this.
const maxListEntries = 10000

// ListDirectory lists a directory of the guest.
func (ts *Toolset) ListDirectory(ctx context.Context, req *mcp.CallToolRequest, args ListDirectoryParams) (*mcp.CallToolResult, *ListDirectoryResult, error) {
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := e.Check(args.Path); err != nil {
		return nil, nil, err
	}
	// One request through the runner, which says what is wrong as well.
	lr, err := e.List(ctx, args.Path, maxListEntries)
	switch {
	case err == nil && lr.NotDir:
		return nil, nil, notADirectory(args.Path)
	case err == nil:
		return nil, listResult(lr), nil
	case !errors.Is(err, guest.ErrNoRunner):
		return nil, nil, fsError(args.Path, err)
	}
	// Without the runner: SFTP (which lists everything).
	ents, err := e.ReadDir(ctx, args.Path)
	if err != nil {
		// Diagnose only on failure: the common case costs no extra round trip.
		if fi, serr := e.Stat(ctx, args.Path); serr == nil && !fi.IsDir() {
			return nil, nil, notADirectory(args.Path)
		}
		return nil, nil, fsError(args.Path, err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	res := &ListDirectoryResult{Entries: make([]ListDirectoryResultEntry, len(ents))}
	for i, f := range ents {
		ent := &res.Entries[i]
		ent.Name = f.Name()
		ent.Size, ent.Mode, ent.ModTime, ent.IsDir = ptr(f.Size()), ptr(f.Mode()), ptr(f.ModTime()), ptr(f.IsDir())
		ent.LinkTarget = f.LinkTarget
	}
	return nil, res, nil
}

// listResult turns the runner's bounded listing into the tool's result, sorted by name.
func listResult(lr *runnerproto.ListResult) *ListDirectoryResult {
	res := &ListDirectoryResult{Entries: make([]ListDirectoryResultEntry, len(lr.Entries)), Truncated: lr.Truncated}
	sort.Slice(lr.Entries, func(i, j int) bool { return lr.Entries[i].Name < lr.Entries[j].Name })
	for i, le := range lr.Entries {
		e := &res.Entries[i]
		e.Name = string(le.Name)
		mode := fs.FileMode(le.Mode)
		e.Size, e.Mode, e.ModTime, e.IsDir = ptr(le.Size), ptr(mode), ptr(time.Unix(0, le.MTime)), ptr(le.Type == tree.Dir)
		if le.Type == tree.Symlink {
			e.LinkTarget = string(le.Target) // a host path (env.Env.List)
		}
	}
	return res
}
