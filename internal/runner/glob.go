package runner

import (
	"io/fs"
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/globfs"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// runGlob looks at the directory first (following links), so that a missing one, or a file,
// is said in the same answer.
func runGlob(req *runnerproto.GlobRequest) (*runnerproto.GlobResult, error) {
	if fi, err := os.Stat(req.Dir); err != nil {
		if name := errnoName(err); name != "" {
			return &runnerproto.GlobResult{Matches: []string{}, DirErrno: name}, nil
		}
		return nil, err
	} else if !fi.IsDir() {
		return &runnerproto.GlobResult{Matches: []string{}, NotDir: true}, nil
	}
	m, truncated, err := globfs.Glob(func(root string) fs.FS { return os.DirFS(root) }, req.Dir, req.Pattern, req.MaxMatches)
	if err != nil {
		return nil, err
	}
	return &runnerproto.GlobResult{Matches: m, Truncated: truncated}, nil
}
