package guest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// WriteFile sets the content of a guest regular file, creating it (with mode, less the umask)
// and, with makeParents, its missing parent directories. Through the runner the file is
// replaced, never rewritten in place: a host killed mid-call leaves the old content or the new
// (see runnerproto.WriteRequest). What is not a regular file is refused with ErrNotRegular (a
// directory with syscall.EISDIR).
// Errors from the guest wrap the errno, so errors.Is works with fs.ErrPermission,
// fs.ErrNotExist or syscall.ENOSPC.
//
// Without the runner it writes in place over SFTP (open with O_TRUNC, write, close), as the
// guest's sftp server allows: a host killed mid-call may leave a mix there.
func (c *Conn) WriteFile(ctx context.Context, p string, data []byte, mode uint32, makeParents bool) error {
	l, err := c.get(ctx)
	if err != nil {
		return err
	}
	return l.ops.writeFile(ctx, c, l, p, data, mode, makeParents)
}

func (b runnerBackend) writeFile(ctx context.Context, c *Conn, l *link, p string, data []byte, mode uint32, makeParents bool) error {
	r, err := b.r.Write(ctx, runnerproto.WriteRequest{Path: p, Data: data, Mode: mode, MakeParents: makeParents})
	if err = c.dropIf(l, err); err != nil {
		return fmt.Errorf("write %s in the guest: %w", p, err)
	}
	return writeError(p, r)
}

// writeError is the error a runner's write result stands for (nil for a write that went well).
func writeError(p string, r *runnerproto.WriteResult) error {
	switch {
	case r.NotRegular == tree.Dir:
		return &fs.PathError{Op: "write", Path: p, Err: syscall.EISDIR}
	case r.NotRegular != "":
		return &NotRegularError{Op: "write", Path: p, Kind: r.NotRegular}
	case r.Errno != "":
		if errno := errnoNamed(r.Errno); errno != 0 {
			return &fs.PathError{Op: "write", Path: p, Err: errno}
		}
		return fmt.Errorf("write %s: %s", p, r.Error)
	case r.Error != "":
		return fmt.Errorf("write %s: %s", p, r.Error)
	}
	return nil
}

// errnoError is the error for an errno a runner names for op on path: a *fs.PathError, whose
// errno errors.Is matches (fs.ErrPermission for EACCES).
func errnoError(op, path, name string) error {
	errno := errnoNamed(name)
	if errno == 0 {
		return fmt.Errorf("%s %s: %s", op, path, name)
	}
	return &fs.PathError{Op: op, Path: path, Err: errno}
}

// lookupError is errnoError for the file tools, which act on what a path leads to: a path
// through something that is not a directory (ENOTDIR) or through too many links (ELOOP) does
// not exist (fs.ErrNotExist), as the guest's sftp server, their fallback, says of both.
func lookupError(op, path, name string) error {
	errno := errnoNamed(name)
	if errno == syscall.ENOTDIR || errno == syscall.ELOOP {
		return &fs.PathError{Op: op, Path: path, Err: notExist{errno}}
	}
	return errnoError(op, path, name)
}

// notExist is an errno that stands for a path that does not exist.
type notExist struct{ syscall.Errno }

func (e notExist) Is(target error) bool { return target == fs.ErrNotExist || e.Errno.Is(target) }
func (e notExist) Unwrap() error        { return e.Errno }

// writeFile writes data to p in place over SFTP (keeping the mode, owner and links of an existing
// file), creating missing parent directories when asked. The common case costs three round
// trips (open, write, close); what failed is looked into only on failure.
func (sessionBackend) writeFile(_ context.Context, _ *Conn, l *link, p string, data []byte, _ uint32, makeParents bool) error {
	sc := l.sftp
	// A fifo would block the open (and the guest's sftp server with it) until a reader came.
	if fi, err := sc.Stat(p); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		return fmt.Errorf("write %s: %w (%s)", p, ErrNotRegular, fi.Mode().Type())
	}
	f, err := sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		if fi, serr := sc.Stat(p); serr == nil && fi.IsDir() {
			return &fs.PathError{Op: "write", Path: p, Err: syscall.EISDIR}
		}
		dir := path.Dir(p)
		if _, serr := sc.Stat(dir); !makeParents || !errors.Is(serr, fs.ErrNotExist) {
			return err
		}
		if err := sc.MkdirAll(dir); err != nil {
			return err
		}
		if f, err = sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC); err != nil {
			return err
		}
	}
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// errnoNamed is the errno a runner names ("ENOSPC"), or 0 for a name this host does not know.
// Names, not numbers, cross the wire: the guest is Linux, the host may be macOS.
func errnoNamed(name string) syscall.Errno {
	for e := syscall.Errno(1); e < 256; e++ {
		if unix.ErrnoName(e) == name {
			return e
		}
	}
	return 0
}
