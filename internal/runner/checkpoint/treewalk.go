package checkpoint

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

// walkCheckpointTree lists the tree a checkpoint covers: what a scan lists (the session's
// ignore rules, and the Keep paths), less every path with a .git component, sorted by path.
// It returns nil and no error when the root is missing.
func walkCheckpointTree(t *runnerproto.CkptTree) ([]walk.Entry, bool, error) {
	fi, err := os.Lstat(t.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !fi.IsDir() {
		return nil, false, errors.New(t.Root + " is not a directory")
	}
	m := ignore.New(t.Patterns)
	var errs []string
	seen := map[string]bool{}
	var out []walk.Entry
	for _, w := range walk.Parallel(t.Root, m, &errs) {
		if hasGitComponent(w.Rel) || seen[w.Rel] {
			continue
		}
		seen[w.Rel] = true
		out = append(out, w)
	}
	for _, k := range t.Keep {
		rel := filepath.ToSlash(filepath.Clean(string(k)))
		if !filepath.IsLocal(rel) || hasGitComponent(rel) || seen[rel] {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(t.Root, rel)); err == nil {
			seen[rel] = true
			out = append(out, walk.Entry{Rel: rel, Info: fi})
		}
	}
	// A kept path whose parent directory the rules skip still needs that parent to be restored.
	for _, w := range out {
		for d := filepath.ToSlash(filepath.Dir(w.Rel)); d != "." && !seen[d]; d = filepath.ToSlash(filepath.Dir(d)) {
			if fi, err := os.Lstat(filepath.Join(t.Root, d)); err == nil && fi.IsDir() {
				seen[d] = true
				out = append(out, walk.Entry{Rel: d, Info: fi})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, false, nil
}

// statKey is what tells a file unchanged without reading it: an in-place write moves ctime
// (which no user can set), a replacement changes the inode.
func statKey(fi fs.FileInfo) (ctime int64, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano(), st.Ino
	}
	return 0, 0
}

// describeWalked is the manifest entry of a walked path (without content hash).
func describeWalked(root string, w walk.Entry) (ckptEntry, bool) {
	e, err := tree.EntryOf(w.Rel, w.Info, func() (string, error) { return os.Readlink(filepath.Join(root, w.Rel)) })
	if err != nil || e.Type == tree.Other {
		return ckptEntry{}, false
	}
	ct, ino := statKey(w.Info)
	return ckptEntry{Entry: e, CTime: ct, Ino: ino}, true
}
