package staging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
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

// OpenGuestFile opens a regular file of the guest copy for streaming, under ctx, and never
// anything else (guest.ErrNotRegular: a fifo or a device swapped in after the changeset was
// built must not block the review). The guest may change it at any time: a caller bounds what
// it reads and checks it against a hash it trusts.
func (s *Session) OpenGuestFile(ctx context.Context, rel tree.Name) (io.ReadCloser, error) {
	return s.conn.OpenFile(ctx, s.guestPath(rel))
}

// ReadGuestFiles reads whole files of the guest copy in one request, each of at most each
// bytes, total in all: nil for one not read (read it with ReadGuestFile). The guest may change
// them at any time: a caller checks what it read against a hash it trusts.
func (s *Session) ReadGuestFiles(ctx context.Context, rels []tree.Name, each, total int64) ([][]byte, error) {
	return s.conn.ReadMany(ctx, s.State.GuestPath, rels, each, total)
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

// prepareGuestDir creates an empty directory at p owned by the guest user, with sudo when
// the user cannot create it (a path like the host's /Users/NAME/...), and closes it to every
// other user (0700: the session's room, see closeRoom).
func prepareGuestDir(ctx context.Context, conn *guest.Conn, p string) error {
	if _, err := conn.Stream(ctx, prepareGuestDirScript(p), nil); err != nil {
		return fmt.Errorf("creating %s in the guest: %w", p, err)
	}
	return nil
}

// prepareGuestDirScript is prepareGuestDir's shell script (`set -e`; it exits 3 when p is
// there and not empty), for a caller that runs more in the same round trip.
func prepareGuestDirScript(p string) string {
	q := shellquote.Quote(p)
	return `set -e
if [ -e ` + q + ` ] && [ -n "$(ls -A ` + q + ` 2>/dev/null)" ]; then
  echo "the guest path ` + strings.ReplaceAll(q, `"`, `\"`) + ` already exists and is not empty: it is not this session's copy; remove it in the guest, or pick another working directory" >&2
  exit 3
fi
if ! mkdir -p ` + q + ` 2>/dev/null || [ ! -w ` + q + ` ]; then
  sudo -n mkdir -p ` + q + `
  sudo -n chown "$(id -u):$(id -g)" ` + q + `
fi
chmod 700 ` + q + "\n"
}

// markerPath is the guest file that proves the guest copy belongs to this session.
func (s *Session) markerPath(home string) string {
	return path.Join(home, markerRel(s.State.ID))
}

func (s *Session) writeMarker(ctx context.Context) error {
	home, err := s.conn.Home(ctx)
	if err != nil {
		return err
	}
	// Through the runner: the agent can put a fifo where the marker goes, which an SFTP open
	// would block on.
	return s.conn.WriteFile(ctx, s.markerPath(home), []byte(s.State.Token+"\n"+s.State.GuestPath+"\n"), 0o644, true)
}

// guestCopyPresent says whether the guest still holds this session's copy: its marker with
// the session's token. A missing marker means the copy is gone (never "the agent deleted
// everything"); a marker without the directory means the agent removed the directory itself.
func (s *Session) guestCopyPresent(ctx context.Context) (bool, error) {
	home, err := s.conn.Home(ctx)
	if err != nil {
		return false, err
	}
	// Read without blocking (the agent can make the marker a fifo); what is not a small
	// regular file is not this session's marker.
	data, err := s.conn.ReadFile(ctx, s.markerPath(home), 4096)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, guest.ErrNotRegular) || errors.Is(err, guest.ErrTooLarge) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	tok, _, _ := strings.Cut(string(data), "\n")
	if tok != s.State.Token {
		return false, nil
	}
	if guestDirGone(ctx, s.conn, s.State.GuestPath) {
		// The agent removed the whole directory: recreate it empty so that it can go on
		// working; every baseline path is then a pending deletion.
		return true, prepareGuestDir(ctx, s.conn, s.State.GuestPath)
	}
	return true, nil
}

// guestDirGone says whether dir does not exist in the guest. It is asked as a read of at most
// no bytes (the runner's, else SFTP's: a connection that only reads a session has no SFTP,
// guest.Agent.Observe), which never blocks on what the agent may have put there (a fifo) and
// follows no link at the end; a directory there is "not a regular file". An error other than
// "no such file" is not an answer: the copy's scan reports it.
func guestDirGone(ctx context.Context, c *guest.Conn, dir string) bool {
	_, err := c.ReadFile(ctx, dir, 0)
	return errors.Is(err, fs.ErrNotExist)
}

// A session's room: what of the session the guest keeps is readable by the user the session
// runs as alone (the Lima user when open, its agent user under a network policy), so that
// no other session's agent can list, read or stat it. The staged copy's root directory, the
// directory of relocated copies (~/limactl-mcp-staged) and the stores
// (~/.cache/limactl-mcp: the session markers, checkpoints, background records, the login
// environment) are 0700: what is inside them, whatever its own mode, is out of reach. An agent
// user's home is 0700 itself (internal/netpolicy). The copy's root is not part of what review
// compares (its mode is never staged, scanned or applied), so closing it changes no review.

// closedModes are the permission bits that open a room to others.
const closedModes = 0o077

// storeRel is where the session user's stores are, relative to its home.
const storeRel = ".cache/limactl-mcp"

// roomDirs are the directories closeRoom closes, home being the session user's home.
func (s *Session) roomDirs(home string) []string {
	dirs := []string{s.State.GuestPath, path.Join(home, storeRel)}
	if parent := path.Dir(s.State.GuestPath); parent == path.Join(home, RelocatedDir) {
		dirs = append(dirs, parent)
	}
	return dirs
}

// closeRoom closes the session's room to other users: a copy or a store that an older
// version left readable by others (0755) is made 0700 at the next connect. It changes only
// directories of the session's own user (the guest's SFTP server runs as that user; another's
// refuses), found with lstat: a symbolic link is left alone.
func (s *Session) closeRoom(ctx context.Context) error {
	sc, err := s.conn.SFTP(ctx)
	if err != nil {
		return err
	}
	home, err := s.conn.Home(ctx)
	if err != nil {
		return err
	}
	for _, d := range s.roomDirs(home) {
		fi, err := sc.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&closedModes == 0 {
			continue // missing (a store not made yet), not a directory, or closed
		}
		if err := sc.Chmod(d, fi.Mode().Perm()&^closedModes|0o700); errors.Is(err, os.ErrPermission) {
			// Not the user's own (a relocated copy's parent that root made in an agent's home,
			// which is closed itself): left as it is.
			continue
		} else if err != nil {
			return fmt.Errorf("closing %s to other users of the guest: %w", d, err)
		}
	}
	return nil
}

func (s *Session) removeGuestCopy(ctx context.Context) error {
	home, err := s.conn.Home(ctx)
	if err != nil {
		return err
	}
	q := shellquote.Quote(s.State.GuestPath)
	script := "rm -f " + shellquote.Quote(s.markerPath(home)) + "; chmod -R u+rwX " + q + " 2>/dev/null; rm -rf " + q + " 2>/dev/null || sudo -n rm -rf " + q
	if _, err := s.conn.Stream(ctx, script, nil); err != nil {
		return fmt.Errorf("removing the guest copy %s: %w", s.State.GuestPath, err)
	}
	return nil
}

// removeCheckpoints removes the session's checkpoint store in the guest (its user's home).
func (s *Session) removeCheckpoints(ctx context.Context) error {
	home, err := s.conn.Home(ctx)
	if err != nil {
		return err
	}
	q := shellquote.Quote(path.Join(home, checkpointStoreRel, s.State.ID))
	if _, err := s.conn.Stream(ctx, "chmod -R u+rwX "+q+" 2>/dev/null; rm -rf "+q, nil); err != nil {
		return fmt.Errorf("removing the checkpoints in the guest: %w", err)
	}
	return nil
}

// Discard removes the session's guest copy and its state on the host.
func (s *Session) Discard(ctx context.Context) error {
	unlock, err := s.store.Lock(s.State.ID, time.Minute)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.removeGuestCopy(ctx); err != nil {
		return err
	}
	if err := s.removeCheckpoints(ctx); err != nil {
		return err
	}
	return s.store.Remove(s.State.ID)
}
