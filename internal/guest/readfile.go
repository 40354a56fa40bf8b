package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// ErrNotRegular is wrapped by ReadFile's error for a path that is not a regular file (a
// directory, a link at the path's end, a fifo, a device, a socket).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by ReadFile's error for a file of more than the limit asked for.
var ErrTooLarge = errors.New("file larger than the limit")

// sftpReadDeadline bounds ReadFile without the runner: SFTP's open and read take no context.
var sftpReadDeadline = 2 * time.Minute

// ReadFile reads a guest regular file of at most limit bytes. It never blocks on a special file
// and never reads more than limit+1 bytes whatever the guest reports as the size: through the
// runner, the file is opened with O_NONBLOCK|O_NOFOLLOW and checked with fstat after the open;
// a path whose last element is a link is refused (ErrNotRegular), so callers resolve links
// themselves. A missing file is fs.ErrNotExist; a larger one ErrTooLarge.
//
// Without the runner it falls back to SFTP: stat (without following a link), refuse what is
// not regular, then read bounded by bytes read, under ctx and a deadline. Residual risk there:
// a guest that swaps the file for a fifo between the stat and the open blocks the guest's sftp
// server; the call still returns at the deadline and the connection is dropped.
func (c *Conn) ReadFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	if limit < 0 {
		return nil, fmt.Errorf("read %s: negative limit %d", path, limit)
	}
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	if l.runner == nil {
		return c.readFileSFTP(ctx, l, path, limit)
	}
	resp, err := c.call(ctx, l, &runnerproto.Request{Read: &runnerproto.ReadRequest{Path: path, Limit: limit}})
	if err != nil {
		return nil, fmt.Errorf("read %s in the guest: %w", path, err)
	}
	r := resp.Read // checked against the request (replies.go)
	switch {
	case r.Missing:
		return nil, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	case r.NotRegular != "":
		return nil, fmt.Errorf("read %s: %w (%s)", path, ErrNotRegular, r.NotRegular)
	case r.Truncated:
		return nil, fmt.Errorf("read %s: %w of %d bytes", path, ErrTooLarge, limit)
	}
	return r.Data, nil
}

func (c *Conn) readFileSFTP(ctx context.Context, l *link, path string, limit int64) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		fi, err := l.sftp.Lstat(path)
		if err != nil {
			done <- result{err: err}
			return
		}
		if !fi.Mode().IsRegular() {
			done <- result{err: fmt.Errorf("read %s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())}
			return
		}
		f, err := l.sftp.Open(path)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, limit+1))
		if err == nil && int64(len(data)) > limit {
			err = fmt.Errorf("read %s: %w of %d bytes", path, ErrTooLarge, limit)
		}
		done <- result{data: data, err: err}
	}()
	t := time.NewTimer(sftpReadDeadline)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		return r.data, nil
	case <-ctx.Done():
		c.drop(l, ctx.Err())
		return nil, ctx.Err()
	case <-t.C:
		err := fmt.Errorf("read %s: the guest's sftp server did not answer within %s (is it a fifo or a device?); the connection is started again", path, sftpReadDeadline)
		c.drop(l, err)
		return nil, err
	}
}
