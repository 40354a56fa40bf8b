package runner

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// runRead reads at most req.Limit bytes of a regular file, from req.Offset. O_NONBLOCK makes opening a fifo
// nobody writes return at once, O_NOFOLLOW refuses a link at the path's end (a link to
// /dev/zero), and fstat on the opened file, not a stat before it, decides what it is: a
// file swapped between a check and the open cannot slip through.
func runRead(req *runnerproto.ReadRequest) (*runnerproto.ReadResult, error) {
	if req.Limit < 0 || req.Offset < 0 {
		return nil, errors.New("negative read limit or offset")
	}
	f, err := os.OpenFile(string(req.Path), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
	if errors.Is(err, syscall.ELOOP) {
		return &runnerproto.ReadResult{NotRegular: tree.Symlink}, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return &runnerproto.ReadResult{Missing: true}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		return &runnerproto.ReadResult{NotRegular: tree.Dir}, nil
	case !fi.Mode().IsRegular():
		return &runnerproto.ReadResult{NotRegular: tree.Other}, nil
	}
	data, err := io.ReadAll(io.NewSectionReader(f, req.Offset, req.Limit+1))
	if err != nil {
		return nil, err
	}
	res := &runnerproto.ReadResult{Data: data, Size: fi.Size()}
	if int64(len(data)) > req.Limit {
		res.Data, res.Truncated = data[:req.Limit], true
	}
	return res, nil
}
