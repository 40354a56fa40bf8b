package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Edit replaces text in the regular file q.Path leads to, in one request through the runner
// (see runnerproto.EditRequest: read, edit, write only if the content is still the one edited).
// The outcomes that are the agent's to fix are in the result (Missing, NotRegular, TooLarge,
// Binary, Exists, Found, Changed); an error is one of the guest's: a failed read (its errno, as
// a *fs.PathError) or a failed write (as WriteFile's), or the connection.
//
// Without the runner it does the same on the host over SFTP: stat (following links), refuse
// what is not a regular file or too large, read bounded under a deadline, edit, write in place
// (WriteFile's fallback), with no hash guard and the residual risks of ReadFile's fallback.
func (c *Conn) Edit(ctx context.Context, q runnerproto.EditRequest) (*runnerproto.EditResult, error) {
	if q.MaxBytes < 0 || q.Count < 1 && q.Old != "" {
		return nil, fmt.Errorf("edit %s: a limit of %d bytes, %d replacements", q.Path, q.MaxBytes, q.Count)
	}
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	return l.ops.edit(ctx, c, l, q)
}

func (b runnerBackend) edit(ctx context.Context, c *Conn, l *link, q runnerproto.EditRequest) (*runnerproto.EditResult, error) {
	r, err := b.r.Edit(ctx, q)
	if err = c.dropIf(l, err); err != nil {
		return nil, fmt.Errorf("edit %s in the guest: %w", q.Path, err)
	}
	if r.Errno != "" {
		return nil, lookupError("read", q.Path, r.Errno)
	}
	if r.Write != nil {
		if err := writeError(q.Path, r.Write); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (s sessionBackend) edit(ctx context.Context, c *Conn, l *link, q runnerproto.EditRequest) (*runnerproto.EditResult, error) {
	res := &runnerproto.EditResult{}
	var data []byte
	err := c.sftpBounded(ctx, l, q.Path, func() error {
		fi, err := l.sftp.Stat(q.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && q.Old == "":
			res.Created = true
			return nil
		case errors.Is(err, fs.ErrNotExist):
			res.Missing = true
			return nil
		case err != nil:
			return err
		case !fi.Mode().IsRegular():
			res.NotRegular, res.Mode = notRegularError("edit", q.Path, fi.Mode()).Kind, uint32(fi.Mode())
			if res.NotRegular == tree.Symlink { // Stat follows links: not reached
				res.NotRegular = tree.Other
			}
			return nil
		case fi.Size() > q.MaxBytes:
			res.Size, res.TooLarge = fi.Size(), true
			return nil
		}
		f, err := l.sftp.Open(q.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, q.MaxBytes+1))
		if err == nil && int64(len(data)) > q.MaxBytes {
			res.Size, res.TooLarge, data = int64(len(data)), true, nil
		}
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case res.Created:
		if err := s.writeFile(ctx, c, l, q.Path, []byte(q.New), 0o644, true); err != nil {
			return nil, err
		}
		return res, nil
	case data == nil && (res.Missing || res.NotRegular != "" || res.TooLarge):
		return res, nil
	}
	out, applied := q.Apply(data)
	applied.Size = int64(len(data))
	*res = applied
	if out == nil {
		return res, nil
	}
	if err := s.writeFile(ctx, c, l, q.Path, out, 0o644, false); err != nil {
		return nil, err
	}
	res.Replaced = res.Found
	return res, nil
}
