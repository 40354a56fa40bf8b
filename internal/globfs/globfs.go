// Package globfs matches glob patterns (with `**`) against a filesystem. The guest runner uses
// it on the guest's own files; the host uses it over SFTP when the runner is not running, so
// that both give the same answers.
package globfs

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

var errStop = errors.New("stop")

// Glob matches pattern under the absolute directory dir, whose files open(dir) serves. A
// pattern that is itself absolute is matched from "/". Matches are absolute and sorted.
func Glob(open func(root string) fs.FS, dir, pattern string, maxMatches int) (*runnerproto.GlobResult, error) {
	orig := pattern
	if strings.HasPrefix(pattern, "/") {
		dir, pattern = "/", strings.TrimLeft(pattern, "/")
	}
	pattern = strings.TrimPrefix(path.Clean("/"+pattern), "/")
	if !doublestar.ValidatePattern(pattern) {
		return nil, errors.New("invalid glob pattern \"" + orig + "\": check brackets and braces; use ** to match any number of directories")
	}
	res := &runnerproto.GlobResult{Matches: []string{}}
	err := doublestar.GlobWalk(open(dir), pattern, func(p string, _ fs.DirEntry) error {
		if maxMatches > 0 && len(res.Matches) >= maxMatches {
			res.Truncated = true
			return errStop
		}
		res.Matches = append(res.Matches, path.Join(dir, p))
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	sort.Strings(res.Matches)
	return res, nil
}
