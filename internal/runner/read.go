package runner

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// runRead reads at most req.Limit bytes of a regular file, from req.Offset. O_NONBLOCK makes opening a fifo
// nobody writes return at once, O_NOFOLLOW refuses a link at the path's end (a link to
// /dev/zero), and fstat on the opened file, not a stat before it, decides what it is: a
// file swapped between a check and the open cannot slip through. With req.Follow the links are
// followed, and what the path leads to is looked at first: only a regular file is opened (a
// device's open may act), and the fstat after the open still decides.
func runRead(req *runnerproto.ReadRequest) (*runnerproto.ReadResult, error) {
	if req.Limit < 0 || req.Offset < 0 {
		return nil, errors.New("negative read limit or offset")
	}
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if req.Follow {
		fi, err := os.Stat(string(req.Path))
		if err != nil {
			return readFailed(err)
		}
		if res := notRegularRead(fi); res != nil {
			return res, nil
		}
	} else {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(string(req.Path), flags, 0)
	if !req.Follow && errors.Is(err, syscall.ELOOP) {
		return &runnerproto.ReadResult{NotRegular: tree.Symlink, Mode: uint32(fs.ModeSymlink)}, nil
	}
	if err != nil {
		return readFailed(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if res := notRegularRead(fi); res != nil {
		return res, nil
	}
	data, err := io.ReadAll(io.NewSectionReader(f, req.Offset, req.Limit+1))
	if err != nil {
		return readFailed(err)
	}
	res := &runnerproto.ReadResult{Data: data, Size: fi.Size(), Mode: uint32(fi.Mode())}
	if int64(len(data)) > req.Limit {
		res.Data, res.Truncated = data[:req.Limit], true
	}
	return res, nil
}

// notRegularRead is the answer for what fi describes when it is not a regular file (nil for one).
func notRegularRead(fi fs.FileInfo) *runnerproto.ReadResult {
	switch {
	case fi.IsDir():
		return &runnerproto.ReadResult{NotRegular: tree.Dir, Mode: uint32(fi.Mode())}
	case !fi.Mode().IsRegular():
		return &runnerproto.ReadResult{NotRegular: tree.Other, Mode: uint32(fi.Mode())}
	}
	return nil
}

// readFailed is the answer for a failed look, open or read: Missing, the errno's name, or (an
// error without one) an error reply.
func readFailed(err error) (*runnerproto.ReadResult, error) {
	if errors.Is(err, os.ErrNotExist) {
		return &runnerproto.ReadResult{Missing: true}, nil
	}
	if name := errnoName(err); name != "" {
		return &runnerproto.ReadResult{Errno: name}, nil
	}
	return nil, err
}

// errnoName is the name of the errno err wraps ("EACCES"), or "". Names, not numbers, cross
// the wire: the host may be macOS.
func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return ""
}
