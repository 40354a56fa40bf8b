package runner

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// runList reads at most req.Max entries of a directory, a batch at a time.
func runList(req *runnerproto.ListRequest) (*runnerproto.ListResult, error) {
	f, err := os.Open(req.Dir)
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
			res.Entries = append(res.Entries, listEntry(req.Dir, d))
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

func listEntry(dir string, d fs.DirEntry) runnerproto.ListEntry {
	e := runnerproto.ListEntry{Name: tree.Name(d.Name()), Type: tree.Other}
	fi, err := d.Info()
	if err != nil {
		return e
	}
	e.Mode, e.Size, e.MTime = uint32(fi.Mode()), fi.Size(), fi.ModTime().UnixNano()
	switch {
	case fi.Mode().IsRegular():
		e.Type = tree.File
	case fi.IsDir():
		e.Type = tree.Dir
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type = tree.Symlink
		if t, err := os.Readlink(filepath.Join(dir, d.Name())); err == nil {
			e.Target = tree.Name(t)
		}
	}
	return e
}
