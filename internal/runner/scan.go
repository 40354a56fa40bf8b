package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/ignore"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

func runScan(req *runnerproto.ScanRequest) *runnerproto.ScanResult {
	res := &runnerproto.ScanResult{Entries: []runnerproto.ScanEntry{}}
	if _, err := os.Lstat(req.Root); errors.Is(err, fs.ErrNotExist) {
		res.RootMissing = true
		return res
	}
	ps := make([]ignore.Pattern, len(req.Patterns))
	for i, p := range req.Patterns {
		ps[i] = ignore.Pattern{Line: p.Line, Dir: p.Dir}
	}
	m := ignore.New(ps)
	seen := map[string]bool{}
	add := func(rel string, fi fs.FileInfo) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		res.Entries = append(res.Entries, entryOf(filepath.Join(req.Root, rel), rel, fi))
	}
	_ = filepath.WalkDir(req.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			res.Errors = append(res.Errors, p+": "+err.Error())
			return nil
		}
		if p == req.Root {
			return nil
		}
		rel, _ := filepath.Rel(req.Root, p)
		if d.IsDir() && rel == ".git" {
			return filepath.SkipDir
		}
		if m.Ignored(filepath.ToSlash(rel), d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // vanished
		}
		add(filepath.ToSlash(rel), fi)
		return nil
	})
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

func entryOf(full, rel string, fi fs.FileInfo) runnerproto.ScanEntry {
	e := runnerproto.ScanEntry{Path: runnerproto.Name(rel), Mode: uint32(fi.Mode().Perm())}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.Mode = st.Mode & 0o7777
		e.MTime = st.Mtim.Nano()
	} else {
		e.MTime = fi.ModTime().UnixNano()
	}
	switch {
	case fi.Mode().IsRegular():
		e.Type, e.Size = runnerproto.TypeFile, fi.Size()
	case fi.IsDir():
		e.Type = runnerproto.TypeDir
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type = runnerproto.TypeSymlink
		t, _ := os.Readlink(full)
		e.Target = runnerproto.Name(t)
	default:
		e.Type = runnerproto.TypeOther
	}
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
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}
