package staging

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// checkWorkdir refuses working directories that are not a project: the filesystem root, or
// the user's home directory (or a parent of it).
func checkWorkdir(workdir string) error {
	if workdir == "/" {
		return fmt.Errorf("refusing to stage the whole filesystem (the working directory is /): run the server in a project directory, or pass --workdir")
	}
	if home, err := os.UserHomeDir(); err == nil {
		if real, err := filepath.EvalSymlinks(home); err == nil {
			home = real
		}
		if tree.Within(workdir, home) {
			return fmt.Errorf("refusing to stage %s, which holds your home directory: run the server in a project directory, or pass --workdir", workdir)
		}
	}
	return nil
}
