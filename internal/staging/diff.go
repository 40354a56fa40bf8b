package staging

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// MaxDiffBytes bounds each side of a diff.
const MaxDiffBytes = 4 << 20

// ErrNotPending is returned for a path with no pending change.
var ErrNotPending = errors.New("no pending change at that path")

// baseContent is the baseline content of a file as the host still has it: its file, read
// inside the working directory only (os.Root) and at most limit bytes, when it still has the
// hash that was staged. Otherwise known is false and nothing of the host's file is returned:
// the host's later edits are the person's, never shown to the agent.
func baseContent(workdir string, base *tree.Entry, limit int64) (data []byte, known bool, err error) {
	root, err := os.OpenRoot(workdir)
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	f, err := root.OpenFile(filepath.FromSlash(string(base.Path)), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != base.Size {
		return nil, false, err
	}
	data, err = io.ReadAll(io.LimitReader(f, limit))
	if err != nil || int64(len(data)) != base.Size {
		return nil, false, err
	}
	if tree.Hash(data) != base.Hash {
		return nil, false, nil
	}
	return data, true, nil
}

// Diff renders the pending change of one path as a unified diff (baseline → guest).
func (s *Session) Diff(ctx context.Context, c Change) (string, error) {
	return s.diffWith(ctx, c, func(base *tree.Entry, limit int64) ([]byte, bool, error) {
		return baseContent(s.State.Workdir, base, limit)
	}, "(the staged version is no longer on the host, which changed it since: only the guest's side is shown)\n")
}

// diffWith is Diff with the old side's content from old (known false: not available, and
// unknownNote says why).
func (s *Session) diffWith(ctx context.Context, c Change, old func(base *tree.Entry, limit int64) ([]byte, bool, error), unknownNote string) (string, error) {
	rel := string(c.Path)
	header := udiff.GitHeader(rel)
	switch {
	case c.Now != nil && c.Now.Type == tree.Symlink, c.Base != nil && c.Base.Type == tree.Symlink && c.Now == nil:
		return header + describe(c) + "\n", nil
	case c.Kind == ModeChanged && !c.ContentChanged:
		return header + udiff.GitModeLines(&c.Base.Mode, &c.Now.Mode), nil
	case (c.Now != nil && c.Now.Type != tree.File) || (c.Base != nil && c.Base.Type != tree.File && c.Now == nil):
		return header + describe(c) + "\n", nil
	}
	var oldText, new *string
	note := ""
	if c.Base != nil && c.Base.Type == tree.File {
		if c.Base.Size > MaxDiffBytes {
			return header + "Binary or large files differ\n", nil
		}
		data, known, err := old(c.Base, MaxDiffBytes+1)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if !known {
			note = unknownNote
		} else {
			if udiff.IsBinary(data) {
				return header + "Binary or large files differ\n", nil
			}
			t := string(data)
			oldText = &t
		}
	}
	if c.Now != nil {
		data, err := s.ReadGuestFile(ctx, c.Path, MaxDiffBytes+1)
		if errors.Is(err, guest.ErrTooLarge) || errors.Is(err, guest.ErrNotRegular) {
			return header + note + "Binary or large files differ (or the file changed while it was read)\n", nil
		}
		if err != nil {
			return "", err
		}
		if len(data) > MaxDiffBytes || udiff.IsBinary(data) {
			return header + note + "Binary or large files differ\n", nil
		}
		t := string(data)
		new = &t
	}
	var oldMode, newMode *uint32
	if c.Base != nil {
		oldMode = &c.Base.Mode
	}
	if c.Now != nil {
		newMode = &c.Now.Mode
	}
	mode := udiff.GitModeLines(oldMode, newMode)
	return header + note + mode + udiff.Unified(rel, rel, oldText, new), nil
}

// describe says in one line what happened to a path that has no text diff.
func describe(c Change) string {
	what := udiff.Describe
	switch {
	case c.Base == nil:
		return "added: " + what(c.Now)
	case c.Now == nil:
		return "deleted: " + what(c.Base)
	}
	return "changed: " + what(c.Base) + " => " + what(c.Now)
}

// PendingDiff is the diff of the pending change at rel.
func (s *Session) PendingDiff(ctx context.Context, rel string) (string, error) {
	cs, err := s.GuestChanges(ctx)
	if err != nil {
		return "", err
	}
	for _, c := range cs.Changes {
		if string(c.Path) == rel {
			return s.Diff(ctx, c)
		}
	}
	return "", ErrNotPending
}
