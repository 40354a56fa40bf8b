package runner

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// runWrite writes a file so that a reader, or a host killed in the middle of the call, sees
// the old content or the new, never a mix (see runnerproto.WriteRequest).
func runWrite(req *runnerproto.WriteRequest) *runnerproto.WriteResult {
	res := &runnerproto.WriteResult{}
	fail := func(err error) *runnerproto.WriteResult {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			res.Errno = unix.ErrnoName(errno)
		}
		res.Error = err.Error()
		return res
	}
	fi, err := os.Lstat(req.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if req.MakeParents {
			if err := os.MkdirAll(filepath.Dir(req.Path), 0o755); err != nil {
				return fail(err)
			}
		}
		return replace(req.Path, req.Data, req.Mode, false, res, fail)
	case err != nil:
		return fail(err)
	case fi.IsDir():
		res.NotRegular = tree.Dir
		return res
	case fi.Mode()&os.ModeSymlink != 0:
		res.InPlace = true
		return inPlace(req.Path, req.Data, req.Mode, res, fail)
	case !fi.Mode().IsRegular():
		res.NotRegular = tree.Other
		return res
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st != nil && (st.Nlink > 1 || int(st.Uid) != os.Getuid()) {
		res.InPlace = true
		return inPlace(req.Path, req.Data, req.Mode, res, fail)
	}
	mode := uint32(fi.Mode().Perm())
	if st != nil {
		mode = uint32(st.Mode) & 0o7777
	}
	return replace(req.Path, req.Data, mode, true, res, fail)
}

// replace writes data to a new file beside p and renames it over p (internal/atomicfile),
// without an fsync: the agent's writes in a scratch VM need no durability across a crash of
// the guest, and the fsync was most of the call's time in the guest (WriteFileNoSync).
// keepMode gives the new file exactly mode; otherwise mode is for a new file, less the umask.
func replace(p string, data []byte, mode uint32, keepMode bool, res *runnerproto.WriteResult, fail func(error) *runnerproto.WriteResult) *runnerproto.WriteResult {
	if err := atomicfile.WriteFileNoSync(p, data, atomicfile.ModeOf(mode), keepMode); err != nil {
		return fail(err)
	}
	return res
}

// inPlace writes through a link, or into a file that must keep its identity, opening it
// without blocking and checking what was opened.
func inPlace(p string, data []byte, mode uint32, res *runnerproto.WriteResult, fail func(error) *runnerproto.WriteResult) *runnerproto.WriteResult {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK|syscall.O_NOCTTY, os.FileMode(mode&0o777))
	if err != nil {
		if errors.Is(err, syscall.ENXIO) { // a fifo nobody reads
			res.NotRegular = tree.Other
			return res
		}
		return fail(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if !fi.Mode().IsRegular() {
		res.NotRegular = tree.Other
		if fi.IsDir() {
			res.NotRegular = tree.Dir
		}
		return res
	}
	if err := f.Truncate(0); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return res
}
