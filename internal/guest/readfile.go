package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/pkg/sftp"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// ErrNotRegular is wrapped by ReadFile's error for a path that is not a regular file (a
// directory, a link at the path's end, a fifo, a device, a socket).
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError is the error for a path that is, or leads to, something other than a regular
// file: it is ErrNotRegular (errors.Is), and names what was found. Kind and Mode come from the
// guest: words for an error, nothing to act on.
type NotRegularError struct {
	Op, Path string
	Kind     tree.Kind   // tree.Dir, tree.Symlink (a link at the path's end, not followed), tree.Other
	Mode     fs.FileMode // its type bits, when known
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s %s: %v (%s)", e.Op, e.Path, ErrNotRegular, e.Kind)
}

// Is makes the error ErrNotRegular.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// IsDir says what was found is a directory.
func (e *NotRegularError) IsDir() bool { return e.Kind == tree.Dir }

// notRegularError is the NotRegularError for what mode describes.
func notRegularError(op, path string, mode fs.FileMode) *NotRegularError {
	k := tree.Other
	switch {
	case mode.IsDir():
		k = tree.Dir
	case mode&fs.ModeSymlink != 0:
		k = tree.Symlink
	}
	return &NotRegularError{Op: op, Path: path, Kind: k, Mode: mode}
}

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
	return l.ops.readFile(ctx, c, l, path, limit)
}

func (b runnerBackend) readFile(ctx context.Context, c *Conn, l *link, path string, limit int64) ([]byte, error) {
	r, err := b.r.Read(ctx, runnerproto.ReadRequest{Path: tree.Name(path), Limit: limit})
	if err = c.dropIf(l, err); err != nil {
		return nil, fmt.Errorf("read %s in the guest: %w", path, err)
	}
	switch {
	case r.Missing:
		return nil, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	case r.Errno != "":
		return nil, errnoError("read", path, r.Errno)
	case r.NotRegular != "":
		return nil, &NotRegularError{Op: "read", Path: path, Kind: r.NotRegular, Mode: fs.FileMode(r.Mode)}
	case r.Truncated:
		return nil, fmt.Errorf("read %s: %w of %d bytes", path, ErrTooLarge, limit)
	}
	return r.Data, nil
}

func (sessionBackend) readFile(ctx context.Context, c *Conn, l *link, path string, limit int64) ([]byte, error) {
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
			done <- result{err: notRegularError("read", path, fi.Mode())}
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

// readChunk is how much of a file OpenFile's reader asks the runner for at once: well within
// one frame (runnerproto.MaxFrame) once encoded.
var readChunk int64 = 4 << 20

// FileReader streams a guest regular file opened with OpenFile.
type FileReader struct {
	path   string
	follow bool // the links in path are followed (OpenFollowing)
	size   int64
	ctx    context.Context
	cancel context.CancelFunc
	fetch  func(ctx context.Context, off int64) chunk
	closer func()

	off  int64  // where the next chunk starts
	buf  []byte // fetched, not yet read
	next chan chunk
	eof  bool
	err  error
}

// chunk is up to readChunk bytes of a file from an offset; more says the file goes on.
type chunk struct {
	data []byte
	more bool
	size int64
	err  error
}

// OpenFile opens a guest regular file for streaming, under the rules of ReadFile: it never
// blocks on a special file (ErrNotRegular, also for a link at the path's end: callers resolve
// links themselves) and a missing file is fs.ErrNotExist. Through the runner the file is read
// in chunks, each its own request that opens the file without blocking and checks it is still
// a regular file, with the next chunk asked for while one is read; every read ends when ctx
// does. The guest may change the file between chunks and a runner may lie: a caller bounds
// what it reads and checks it against a hash it trusts.
//
// Without the runner it falls back to SFTP as ReadFile does (lstat, then open and reads each
// under ctx and a deadline), with the same residual risk of a swap between lstat and open.
func (c *Conn) OpenFile(ctx context.Context, path string) (*FileReader, error) {
	return c.openFile(ctx, path, false)
}

// OpenFollowing opens for streaming the regular file path leads to, its links followed in the
// guest, under the rules of OpenFile otherwise: what the path leads to is looked at before it is
// opened, opened without blocking and checked again after the open (a *NotRegularError, which
// names what it is, for anything else); a missing file is fs.ErrNotExist. Through the runner
// the whole call is one request for a file of one chunk (the file tools' read). Without the
// runner: SFTP stat (following links), then open, as OpenFile.
func (c *Conn) OpenFollowing(ctx context.Context, path string) (*FileReader, error) {
	return c.openFile(ctx, path, true)
}

func (c *Conn) openFile(ctx context.Context, path string, follow bool) (*FileReader, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &FileReader{path: path, follow: follow, ctx: rctx, cancel: cancel, closer: func() {}}
	if err := l.ops.openFile(ctx, c, l, r); err != nil {
		cancel()
		return nil, err
	}
	first := r.fetch(rctx, 0)
	if first.err != nil {
		r.Close()
		return nil, first.err
	}
	r.size = first.size
	r.take(first)
	return r, nil
}

// Size is the file's size when it was opened, as the guest reported it.
func (r *FileReader) Size() int64 { return r.size }

// Read reads the next bytes of the file.
func (r *FileReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		switch {
		case r.err != nil:
			return 0, r.err
		case r.eof:
			return 0, io.EOF
		}
		ch := r.next
		r.next = nil
		if ch == nil {
			ch = r.start(r.off)
		}
		var c chunk
		select {
		case c = <-ch:
		case <-r.ctx.Done():
			r.err = r.ctx.Err()
			continue
		}
		if c.err != nil {
			r.err = c.err
			continue
		}
		r.take(c)
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// take makes c the bytes to read next and asks for the chunk after it.
func (r *FileReader) take(c chunk) {
	r.buf = c.data
	r.off += int64(len(c.data))
	switch {
	case !c.more:
		r.eof = true
	case len(c.data) == 0:
		r.err = fmt.Errorf("read %s: the guest said there was more but sent nothing", r.path)
	default:
		r.next = r.start(r.off)
	}
}

func (r *FileReader) start(off int64) chan chunk {
	ch := make(chan chunk, 1)
	go func() { ch <- r.fetch(r.ctx, off) }()
	return ch
}

// Close ends the stream and any read ahead in flight.
func (r *FileReader) Close() error {
	r.cancel()
	r.closer()
	return nil
}

// openFile sets r up to read through the runner, a chunk a request.
func (b runnerBackend) openFile(_ context.Context, c *Conn, l *link, r *FileReader) error {
	r.fetch = func(ctx context.Context, off int64) chunk { return b.readChunk(ctx, c, l, r.path, r.follow, off) }
	return nil
}

func (b runnerBackend) readChunk(ctx context.Context, c *Conn, l *link, path string, follow bool, off int64) chunk {
	rr, err := b.r.Read(ctx, runnerproto.ReadRequest{Path: tree.Name(path), Offset: off, Limit: readChunk, Follow: follow})
	if err = c.dropIf(l, err); err != nil {
		return chunk{err: fmt.Errorf("read %s in the guest: %w", path, err)}
	}
	switch {
	case rr.Missing:
		return chunk{err: &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}}
	case rr.Errno != "" && follow:
		return chunk{err: lookupError("read", path, rr.Errno)}
	case rr.Errno != "":
		return chunk{err: errnoError("read", path, rr.Errno)}
	case rr.NotRegular != "":
		return chunk{err: &NotRegularError{Op: "read", Path: path, Kind: rr.NotRegular, Mode: fs.FileMode(rr.Mode)}}
	}
	return chunk{data: rr.Data, more: rr.Truncated, size: rr.Size}
}

// openFile sets r up to read over SFTP: lstat, refuse what is not a regular file, open;
// the open and each read are bounded by ctx (the caller's, not the reader's: a read ahead
// abandoned by Close must not drop the connection) and sftpReadDeadline (the connection is
// dropped when one is not answered: the guest's sftp server may be blocked on a swapped-in
// fifo).
func (sessionBackend) openFile(ctx context.Context, c *Conn, l *link, r *FileReader) error {
	type opened struct {
		f    *sftp.File
		size int64
	}
	got := make(chan opened, 1)
	err := c.sftpBounded(ctx, l, r.path, func() error {
		stat := l.sftp.Lstat
		if r.follow {
			stat = l.sftp.Stat
		}
		fi, err := stat(r.path)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return notRegularError("read", r.path, fi.Mode())
		}
		f, err := l.sftp.Open(r.path)
		if err != nil {
			return err
		}
		got <- opened{f, fi.Size()}
		return nil
	})
	if err != nil {
		// An open that finishes after the deadline is on a dropped connection.
		return err
	}
	o := <-got
	r.closer = func() { go o.f.Close() }
	r.fetch = func(_ context.Context, off int64) chunk {
		buf := make([]byte, readChunk+1)
		var n int
		err := c.sftpBounded(ctx, l, r.path, func() error {
			var err error
			n, err = o.f.ReadAt(buf, off)
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return err
		})
		if err != nil {
			return chunk{err: err}
		}
		if int64(n) > readChunk {
			return chunk{data: buf[:readChunk], more: true, size: o.size}
		}
		return chunk{data: buf[:n], size: o.size}
	}
	return nil
}

// sftpBounded runs op, which uses l's SFTP client, until it ends, ctx ends or
// sftpReadDeadline passes; in the last two cases the connection is dropped, which ends op.
func (c *Conn) sftpBounded(ctx context.Context, l *link, path string, op func() error) error {
	done := make(chan error, 1)
	go func() { done <- op() }()
	t := time.NewTimer(sftpReadDeadline)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		c.drop(l, ctx.Err())
		return ctx.Err()
	case <-t.C:
		err := fmt.Errorf("read %s: the guest's sftp server did not answer within %s (is it a fifo or a device?); the connection is started again", path, sftpReadDeadline)
		c.drop(l, err)
		return err
	}
}
