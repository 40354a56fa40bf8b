package guest

import (
	"context"
	"errors"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// ErrNotDir is wrapped by the error of an operation on a directory (Glob) given a path that
// leads to something else.
var ErrNotDir = errors.New("not a directory")

// ErrNoRunner is returned for operations that need the guest runner when it is not running.
var ErrNoRunner = errors.New("the guest runner is not running in this guest (see the server's log for why); this operation needs it")

// runnerOf returns the live link and its runner (ErrNoRunner without one).
func (c *Conn) runnerOf(ctx context.Context) (*link, *runnerclient.Client, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := l.ops.runner()
	if err != nil {
		return nil, nil, err
	}
	return l, r, nil
}

// dropIf drops l when err says its connection broke, so that the next call reconnects; it
// returns err.
func (c *Conn) dropIf(l *link, err error) error {
	if err != nil && IsConnectionError(err) {
		c.drop(l, err)
	}
	return err
}

// Scan lists a guest tree (see runnerproto.ScanRequest).
func (c *Conn) Scan(ctx context.Context, req runnerproto.ScanRequest) (*runnerproto.ScanResult, error) {
	l, r, err := c.runnerOf(ctx)
	if err != nil {
		return nil, err
	}
	res, err := r.Scan(ctx, req)
	return res, c.dropIf(l, err)
}

// Hash returns the SHA-256 of guest files, one per path ("" for one that is not a regular file).
func (c *Conn) Hash(ctx context.Context, root string, paths []tree.Name) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	l, r, err := c.runnerOf(ctx)
	if err != nil {
		return nil, err
	}
	res, err := r.Hash(ctx, root, paths)
	return res, c.dropIf(l, err)
}

// ReadMany reads whole regular files under root in one runner request (ErrNoRunner without
// it), each of at most each bytes, total in all: nil for a path not read, which the caller
// reads alone (ReadFile says why one cannot be).
func (c *Conn) ReadMany(ctx context.Context, root string, paths []tree.Name, each, total int64) ([][]byte, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	l, r, err := c.runnerOf(ctx)
	if err != nil {
		return nil, err
	}
	res, err := r.ReadMany(ctx, root, paths, each, total)
	return res, c.dropIf(l, err)
}

// List reads at most max entries of a guest directory, through the runner (ErrNoRunner
// without it): a directory of millions of entries costs no more than max.
func (c *Conn) List(ctx context.Context, dir string, max int) (*runnerproto.ListResult, error) {
	l, r, err := c.runnerOf(ctx)
	if err != nil {
		return nil, err
	}
	res, err := r.List(ctx, runnerproto.ListRequest{Dir: dir, Max: max})
	if err = c.dropIf(l, err); err != nil {
		return nil, err
	}
	if res.Errno != "" {
		return nil, lookupError("list", dir, res.Errno)
	}
	return res, nil
}
