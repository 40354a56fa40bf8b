package tools

import (
	"context"

	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// checkDir says clearly when the directory of a search is missing or not a directory.
func (ts *Toolset) checkDir(ctx context.Context, dir, guestDir string) error {
	sc, err := ts.conn.SFTP(ctx)
	if err != nil {
		return err
	}
	if fi, err := sc.Stat(guestDir); err != nil {
		return fsError(dir, err)
	} else if !fi.IsDir() {
		return notADirectory(dir)
	}
	return nil
}

// searchDir resolves the optional directory of glob and search_file_content: the given
// absolute path, or the workspace's default directory.
func searchDir(ws *workspace.Workspace, p *string) (host, guest string, err error) {
	host = ws.DefaultDir()
	if p != nil && *p != "" {
		host = *p
	}
	guest, err = ws.ToGuest(host)
	return host, guest, err
}
