package runner

import (
	"errors"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// errStop ends a walk early.
var errStop = errors.New("stop")

// runGlob matches Pattern under Dir. A pattern that is itself absolute is matched from "/".
func runGlob(req *runnerproto.GlobRequest) (*runnerproto.GlobResult, error) {
	dir, pattern := req.Dir, req.Pattern
	if strings.HasPrefix(pattern, "/") {
		dir, pattern = "/", strings.TrimLeft(pattern, "/")
	}
	pattern = strings.TrimPrefix(path.Clean("/"+pattern), "/")
	if !doublestar.ValidatePattern(pattern) {
		return nil, errors.New("invalid glob pattern " + quote(req.Pattern) + ": check brackets and braces; use ** to match any number of directories")
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, errors.New(dir + " is not a directory")
	}
	res := &runnerproto.GlobResult{Matches: []string{}}
	limit := req.MaxMatches
	err = doublestar.GlobWalk(os.DirFS(dir), pattern, func(p string, _ os.DirEntry) error {
		if limit > 0 && len(res.Matches) >= limit {
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

func quote(s string) string { return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\"" }
