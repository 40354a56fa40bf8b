package tools

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

var searchFileContentTool = &mcp.Tool{
	Name:  "search_file_content",
	Title: "Search file contents",
	Description: `Searches for a regular expression pattern within the content of files in a specified directory. Internally calls 'git grep -n --no-index'.
The pattern is an extended regular expression (as git grep -E). Binary files are skipped. Output lines are
path:line:text with paths relative to the searched directory.`,
	Annotations: readOnly,
}

// SearchFileContentParams is the input of search_file_content (as in Lima's server).
type SearchFileContentParams struct {
	Pattern string  `json:"pattern" jsonschema:"The regular expression (regex) to search for (e.g., 'function\\s+myFunction')."`
	Path    *string `json:"path,omitempty" jsonschema:"The absolute path to the directory to search within. Defaults to the current working directory."`
	Include *string `json:"include,omitempty" jsonschema:"A glob pattern to filter which files are searched (e.g., '*.js', 'src/**/*.{ts,tsx}'). If omitted, searches most files (respecting common ignores)."`
}

// SearchFileContentResult is the output of search_file_content.
type SearchFileContentResult struct {
	GitGrepOutput string `json:"git_grep_output" jsonschema:"The raw output from the 'git grep -n --no-index' command, containing matching lines with filenames and line numbers."`
	Truncated     bool   `json:"truncated,omitempty" jsonschema:"true when there were more matches than returned"`
}

// SearchFileContent searches file contents in the guest.
func (ts *Toolset) SearchFileContent(ctx context.Context, req *mcp.CallToolRequest, args SearchFileContentParams) (*mcp.CallToolResult, *SearchFileContentResult, error) {
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if args.Pattern == "" {
		return nil, nil, fmt.Errorf("pattern is empty: pass a regular expression to search for")
	}
	dir, err := searchDir(e, args.Path)
	if err != nil {
		return nil, nil, err
	}
	if err := checkDir(ctx, e, dir); err != nil {
		return nil, nil, err
	}
	grep := runnerproto.GrepRequest{Dir: dir, Pattern: args.Pattern, MaxBytes: ts.lim.SearchBytes}
	if args.Include != nil {
		grep.Include = *args.Include
	}
	r, err := e.Grep(ctx, grep)
	if err != nil {
		return nil, nil, err
	}
	if r.BadPattern {
		return nil, nil, fmt.Errorf("invalid regular expression %q: %s. The pattern is an extended regular expression (git grep -E): escape ( ) [ ] { } . * + ? | ^ $ with a backslash to match them literally", args.Pattern, r.Error)
	}
	if r.Error != "" {
		return nil, nil, fmt.Errorf("search in %s failed: %s", dir, r.Error)
	}
	return nil, &SearchFileContentResult{GitGrepOutput: r.Output, Truncated: r.Truncated}, nil
}
