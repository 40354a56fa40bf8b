package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
)

var globTool = &mcp.Tool{
	Name:  "glob",
	Title: "Find files by name",
	Description: `Finds files matching specific glob patterns (e.g., src/**/*.ts, *.md). ** matches any number of
directories; {a,b} matches either. Matches are absolute paths, sorted.`,
	Annotations: readOnly,
}

// GlobParams is the input of glob (as in Lima's server).
type GlobParams struct {
	Pattern string  `json:"pattern" jsonschema:"The glob pattern to match against (e.g., '*.py', 'src/**/*.js')."`
	Path    *string `json:"path,omitempty" jsonschema:"The absolute path to the directory to search within. If omitted, searches the tool's root directory."`
}

// GlobResult is the output of glob.
type GlobResult struct {
	Matches   []string `json:"matches" jsonschema:"A list of absolute file paths that match the provided glob pattern."`
	Truncated bool     `json:"truncated,omitempty" jsonschema:"true when there were more matches than returned"`
}

// Glob finds files by name in the guest.
func (ts *Toolset) Glob(ctx context.Context, req *mcp.CallToolRequest, args GlobParams) (*mcp.CallToolResult, *GlobResult, error) {
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if args.Pattern == "" {
		return nil, nil, fmt.Errorf("pattern is empty: pass a glob pattern such as \"**/*.go\"")
	}
	dir, err := searchDir(e, args.Path)
	if err != nil {
		return nil, nil, err
	}
	// One request: the runner looks at dir itself.
	matches, truncated, err := e.Glob(ctx, dir, args.Pattern, ts.lim.GlobMatches)
	if errors.Is(err, guest.ErrNotDir) {
		return nil, nil, notADirectory(dir)
	}
	if err != nil {
		return nil, nil, fsError(dir, err)
	}
	return nil, &GlobResult{Matches: matches, Truncated: truncated}, nil
}
