package runner

import (
	"io/fs"
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/globfs"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

func runGlob(req *runnerproto.GlobRequest) (*runnerproto.GlobResult, error) {
	m, truncated, err := globfs.Glob(func(root string) fs.FS { return os.DirFS(root) }, req.Dir, req.Pattern, req.MaxMatches)
	if err != nil {
		return nil, err
	}
	return &runnerproto.GlobResult{Matches: m, Truncated: truncated}, nil
}
