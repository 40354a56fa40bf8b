package staging

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// The named operations on the staged copy in the guest. Everything above staging (review,
// the commands) changes or reads the guest copy through these, never through the connection.

// ReadGuestFile reads a regular file of the guest copy: at most limit bytes (guest.ErrTooLarge
// beyond), and never anything else (guest.ErrNotRegular: a fifo, a device, a link), so that it
// can neither block nor read without end.
func (s *Session) ReadGuestFile(ctx context.Context, rel tree.Name, limit int64) ([]byte, error) {
	return s.conn.ReadFile(ctx, s.guestPath(rel), limit)
}

// OpenGuestFile opens a file of the guest copy for streaming. The guest may change it at any
// time: a caller bounds what it reads and checks it against a hash it trusts.
func (s *Session) OpenGuestFile(ctx context.Context, rel tree.Name) (io.ReadCloser, error) {
	sc, err := s.conn.SFTP(ctx)
	if err != nil {
		return nil, err
	}
	return sc.Open(s.guestPath(rel))
}

// HashGuestFiles returns the SHA-256 of files of the guest copy, one per path ("" for one
// that is not a regular file), in one request.
func (s *Session) HashGuestFiles(ctx context.Context, rels []tree.Name) ([]string, error) {
	return s.conn.Hash(ctx, s.State.GuestPath, rels)
}

// SetGuestEntry makes the guest copy's rel match e: absent when e is nil, else a file with
// content (and e's permission bits), a symbolic link to e.Target, or a directory.
func (s *Session) SetGuestEntry(ctx context.Context, rel tree.Name, e *tree.Entry, content []byte) error {
	gp := s.guestPath(rel)
	q := shellquote.Quote(gp)
	var err error
	switch {
	case e == nil:
		_, err = s.conn.Stream(ctx, "rm -rf -- "+q, nil)
	case e.Type == tree.File:
		script := "mkdir -p " + shellquote.Quote(path.Dir(gp)) + " && rm -rf -- " + q + " && cat > " + q + " && chmod " + fmt.Sprintf("%o", e.Mode&0o777) + " " + q
		_, err = s.conn.Stream(ctx, script, bytes.NewReader(content))
	case e.Type == tree.Symlink:
		_, err = s.conn.Stream(ctx, "rm -rf -- "+q+" && ln -s -- "+shellquote.Quote(string(e.Target))+" "+q, nil)
	case e.Type == tree.Dir:
		_, err = s.conn.Stream(ctx, "mkdir -p -- "+q, nil)
	default:
		return fmt.Errorf("cannot make a %s in the guest", e.Type)
	}
	return err
}

// removeGuestPaths removes paths of the guest copy, whole trees included, in one round trip.
func (s *Session) removeGuestPaths(ctx context.Context, rels []tree.Name) error {
	if len(rels) == 0 {
		return nil
	}
	var list bytes.Buffer
	for _, p := range rels {
		list.WriteString(string(p))
		list.WriteByte(0)
	}
	_, err := s.conn.Stream(ctx, "cd "+shellquote.Quote(s.State.GuestPath)+" && xargs -0 rm -rf --", &list)
	return err
}

// guestPath is rel's path in the guest.
func (s *Session) guestPath(rel tree.Name) string {
	return path.Join(s.State.GuestPath, string(rel))
}
