package tools

import (
	"context"

	"github.com/limactl-mcp/limactl-mcp/internal/tools/env"
)

// checkDir says clearly when the directory of a search is missing or not a directory.
func checkDir(ctx context.Context, e *env.Env, dir string) error {
	if fi, err := e.Stat(ctx, dir); err != nil {
		return fsError(dir, err)
	} else if !fi.IsDir() {
		return notADirectory(dir)
	}
	return nil
}

// searchDir resolves the optional directory of glob and search_file_content: the given
// absolute path, or the workspace's default directory.
func searchDir(e *env.Env, p *string) (string, error) {
	dir := e.DefaultDir()
	if p != nil && *p != "" {
		dir = *p
	}
	return dir, e.Check(dir)
}
