package runner

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// runReadMany reads whole regular files under req.Root, each at most req.Each bytes, at most
// req.Total in all; what is not read is left for a Read of its own.
func runReadMany(req *runnerproto.ReadManyRequest) (*runnerproto.ReadManyResult, error) {
	if req.Each < 0 || req.Total < 0 || req.Total > runnerproto.MaxReadManyTotal {
		return nil, errors.New("read many: bounds out of range")
	}
	res := &runnerproto.ReadManyResult{Files: make([]runnerproto.ReadManyFile, len(req.Paths))}
	left := req.Total
	for i, p := range req.Paths {
		rel := filepath.Clean(string(p))
		if !filepath.IsLocal(rel) {
			continue
		}
		if data, ok := readWhole(filepath.Join(req.Root, rel), min(req.Each, left)); ok {
			res.Files[i] = runnerproto.ReadManyFile{OK: true, Data: data}
			left -= int64(len(data))
		}
	}
	return res, nil
}

// readWhole reads the regular file at p when it holds at most limit bytes, opened as runRead
// opens one: no link followed at the end, without blocking, fstat after the open deciding.
func readWhole(p string, limit int64) ([]byte, bool) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil || int64(len(data)) > limit {
		return nil, false
	}
	return data, true
}
