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
)

var errStop = errors.New("stop")

// Glob matches pattern under the absolute directory dir, whose files open(dir) serves. A
// pattern that is itself absolute is matched from "/". Matches are absolute and sorted;
// truncated says there were more than maxMatches (when it is positive).
func Glob(open func(root string) fs.FS, dir, pattern string, maxMatches int) (matches []string, truncated bool, err error) {
	orig := pattern
	if strings.HasPrefix(pattern, "/") {
		dir, pattern = "/", strings.TrimLeft(pattern, "/")
	}
	pattern = strings.TrimPrefix(path.Clean("/"+pattern), "/")
	if !doublestar.ValidatePattern(pattern) {
		return nil, false, errors.New("invalid glob pattern \"" + orig + "\": check brackets and braces; use ** to match any number of directories")
	}
	matches = []string{}
	err = doublestar.GlobWalk(open(dir), pattern, func(p string, _ fs.DirEntry) error {
		if maxMatches > 0 && len(matches) >= maxMatches {
			truncated = true
			return errStop
		}
		matches = append(matches, path.Join(dir, p))
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, false, err
	}
	sort.Strings(matches)
	return matches, truncated, nil
}
