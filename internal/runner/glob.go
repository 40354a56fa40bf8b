package runner

import (
	"io/fs"
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/globfs"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

func runGlob(req *runnerproto.GlobRequest) (*runnerproto.GlobResult, error) {
	return globfs.Glob(func(root string) fs.FS { return os.DirFS(root) }, req.Dir, req.Pattern, req.MaxMatches)
}
