package guest

import (
	"context"
	"errors"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// ErrNoRunner is returned for operations that need the guest runner when it is not running.
var ErrNoRunner = errors.New("the guest runner is not running in this guest (see the server's log for why); this operation needs it")

// call sends a request to the runner of l; a broken connection is dropped so that the next
// call reconnects.
func (c *Conn) call(ctx context.Context, l *link, req *runnerproto.Request) (*runnerproto.Response, error) {
	if l.runner == nil {
		return nil, ErrNoRunner
	}
	resp, err := l.runner.call(ctx, req)
	if err != nil {
		if IsConnectionError(err) {
			c.drop(l, err)
		}
		return nil, err
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	return resp, nil
}

// Scan lists a guest tree (see ScanRequest).
func (c *Conn) Scan(ctx context.Context, req ScanRequest) (*ScanResult, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.call(ctx, l, &runnerproto.Request{Scan: &req})
	if err != nil {
		return nil, err
	}
	if resp.Scan == nil {
		return nil, errors.New("the guest runner sent no scan result")
	}
	return resp.Scan, nil
}

// Hash returns the SHA-256 of guest files, one per path ("" for one that is not a regular file).
func (c *Conn) Hash(ctx context.Context, root string, paths []tree.Name) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.call(ctx, l, &runnerproto.Request{Hash: &runnerproto.HashRequest{Root: root, Paths: paths}})
	if err != nil {
		return nil, err
	}
	return resp.Hash.Hashes, nil // checked against the request (replies.go)
}

// List reads at most max entries of a guest directory, through the runner (ErrNoRunner
// without it): a directory of millions of entries costs no more than max.
func (c *Conn) List(ctx context.Context, dir string, max int) (*ListResult, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.call(ctx, l, &runnerproto.Request{List: &runnerproto.ListRequest{Dir: dir, Max: max}})
	if err != nil {
		return nil, err
	}
	return resp.List, nil
}
