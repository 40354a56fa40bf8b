// Package workdirpath turns the --workdir flag and path arguments into the absolute paths the
// commands work with, in one place, so that every command names a working directory the same
// way.
package workdirpath

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Abs is dir as an absolute path, symlinks kept (default: the current directory).
func Abs(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	return filepath.Abs(dir)
}

// Resolve is the absolute, symlink-free working directory (default: the current one): the
// path a staged session is known by.
func Resolve(dir string) (string, error) {
	abs, err := Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

// Rel turns a path argument into a slash-separated path relative to workdir (a path from
// Resolve). A relative p is taken from the current directory; a p outside workdir is an
// error.
func Rel(workdir, p string) (string, error) {
	if !filepath.IsAbs(p) {
		wd, err := Resolve("")
		if err != nil {
			return "", err
		}
		p = filepath.Join(wd, p)
	}
	rel, ok := tree.Inside(filepath.ToSlash(workdir), filepath.ToSlash(filepath.Clean(p)))
	if !ok {
		return "", fmt.Errorf("%s is outside the working directory %s", p, workdir)
	}
	return rel, nil
}
