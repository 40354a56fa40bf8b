package runner

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/limactl-mcp/limactl-mcp/internal/runner/walk"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// runList reads at most req.Max entries of a directory, a batch at a time.
func runList(req *runnerproto.ListRequest) (*runnerproto.ListResult, error) {
	f, err := os.Open(req.Dir)
	if name := errnoName(err); name != "" {
		return &runnerproto.ListResult{Entries: []runnerproto.ListEntry{}, Errno: name}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return &runnerproto.ListResult{NotDir: true}, nil
	}
	res := &runnerproto.ListResult{Entries: []runnerproto.ListEntry{}}
	for len(res.Entries) <= req.Max {
		ents, err := f.ReadDir(min(1024, req.Max+1-len(res.Entries)))
		for _, d := range ents {
			res.Entries = append(res.Entries, listEntry(f, d))
		}
		if errors.Is(err, io.EOF) || len(ents) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(res.Entries) > req.Max {
		res.Entries, res.Truncated = res.Entries[:req.Max], true
	}
	return res, nil
}

// listEntry describes d, an entry of the open directory dir (its lstat on dir: walk.StatAt).
func listEntry(dir *os.File, d fs.DirEntry) runnerproto.ListEntry {
	e := runnerproto.ListEntry{Name: tree.Name(d.Name()), Type: tree.Other}
	fi, err := walk.StatAt(dir, d.Name())
	if err != nil {
		return e
	}
	// What the entry is, and a link's target, as everywhere else (tree.EntryOf); a listing
	// also gives the whole mode and the size of every kind of entry.
	te, _ := tree.EntryOf(d.Name(), fi, func() (string, error) { return os.Readlink(filepath.Join(dir.Name(), d.Name())) })
	e.Type, e.Target = te.Type, te.Target
	e.Mode, e.Size, e.MTime = uint32(fi.Mode()), fi.Size(), fi.ModTime().UnixNano()
	return e
}
