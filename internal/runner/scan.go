package runner

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/ignore"
	"github.com/limactl-mcp/limactl-mcp/internal/runner/walk"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

func runScan(req *runnerproto.ScanRequest) *runnerproto.ScanResult {
	res := &runnerproto.ScanResult{Entries: []tree.Entry{}}
	if _, err := os.Lstat(req.Root); errors.Is(err, fs.ErrNotExist) {
		res.RootMissing = true
		return res
	}
	m := ignore.New(req.Patterns)
	seen := map[string]bool{}
	add := func(rel string, fi fs.FileInfo) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		res.Entries = append(res.Entries, entryOf(filepath.Join(req.Root, rel), rel, fi))
	}
	for _, e := range walk.Parallel(req.Root, m, &res.Errors) {
		add(e.Rel, e.Info)
	}
	for _, k := range req.Keep {
		rel := filepath.Clean(string(k))
		if !filepath.IsLocal(rel) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(req.Root, rel)); err == nil {
			add(filepath.ToSlash(rel), fi)
		}
	}
	sort.Slice(res.Entries, func(i, j int) bool { return res.Entries[i].Path < res.Entries[j].Path })
	for _, a := range req.Also {
		rel := filepath.Clean(string(a))
		if !filepath.IsLocal(rel) {
			continue
		}
		_ = filepath.WalkDir(filepath.Join(req.Root, rel), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, err := d.Info(); err == nil {
				r, _ := filepath.Rel(req.Root, p)
				res.Also = append(res.Also, entryOf(p, filepath.ToSlash(r), fi))
			}
			return nil
		})
	}
	return res
}

func entryOf(full, rel string, fi fs.FileInfo) tree.Entry {
	// A link that cannot be read is listed with an empty target, as it was before.
	e, _ := tree.EntryOf(rel, fi, func() (string, error) { return os.Readlink(full) })
	return e
}

func runHash(req *runnerproto.HashRequest) *runnerproto.HashResult {
	res := &runnerproto.HashResult{Hashes: make([]string, len(req.Paths))}
	for i, p := range req.Paths {
		rel := filepath.Clean(string(p))
		if !filepath.IsLocal(rel) {
			continue
		}
		res.Hashes[i] = hashFile(filepath.Join(req.Root, rel))
	}
	return res
}

func hashFile(p string) string {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	sum, err := tree.HashReader(f)
	if err != nil {
		return ""
	}
	return sum
}
