// Package workspace maps the paths an agent sees (the host's) to the paths of the guest.
//
// Without staging the two are the same, as in Lima's own MCP server. With staging, the host
// working directory maps to the staged copy in the guest; any other absolute path is the
// guest's own filesystem.
package workspace

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Workspace maps host paths to guest paths and back.
type Workspace struct {
	hostRoot  string // "" for the identity mapping
	guestRoot string
	// shownRoot is the path the agent knows hostRoot by, when that is another one: the
	// directory it was started in, reached through a symbolic link (a symlinked parent, as
	// macOS has /tmp -> /private/tmp and people keep ~/src -> /Volumes/...). "" when it is
	// hostRoot itself.
	shownRoot string
	// defaultDir is the host directory used when a tool is given none.
	defaultDir string
}

// Identity maps every path to itself; defaultDir is used when a tool names no directory.
func Identity(defaultDir string) *Workspace {
	return &Workspace{defaultDir: path.Clean(defaultDir)}
}

// Staged maps hostRoot (and what is under it) to guestRoot.
func Staged(hostRoot, guestRoot string) *Workspace {
	return &Workspace{hostRoot: path.Clean(hostRoot), guestRoot: path.Clean(guestRoot), defaultDir: path.Clean(hostRoot)}
}

// ShownAs is w for an agent that knows its host root as shown: a path through a symbolic
// link to the same directory (see workdirpath.Abs and Resolve). Paths under either map to
// the guest; paths coming back, and the default directory, are given under shown.
func (w *Workspace) ShownAs(shown string) *Workspace {
	shown = path.Clean(shown)
	if w.hostRoot == "" || shown == w.hostRoot {
		return w
	}
	c := *w
	c.shownRoot = shown
	if c.defaultDir == w.hostRoot {
		c.defaultDir = shown
	}
	return &c
}

// ErrRelative is wrapped by the error for a path that is not absolute.
var ErrRelative = errors.New("expected an absolute path")

// ToGuest returns the guest path for the absolute host path p.
func (w *Workspace) ToGuest(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty: pass an absolute path")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	if !path.IsAbs(p) {
		hint := path.Join(w.defaultDir, p)
		return "", fmt.Errorf("%w, got a relative path: %q; pass it as an absolute path, such as %q", ErrRelative, p, hint)
	}
	p = path.Clean(p)
	if rel, ok := tree.Inside(w.hostRoot, p); ok {
		return path.Join(w.guestRoot, rel), nil
	}
	if rel, ok := tree.Inside(w.shownRoot, p); ok {
		return path.Join(w.guestRoot, rel), nil
	}
	return p, nil
}

// shown is the host root as the agent knows it.
func (w *Workspace) shown() string {
	if w.shownRoot != "" {
		return w.shownRoot
	}
	return w.hostRoot
}

// ToHost returns the host path for the guest path p (the inverse of ToGuest).
func (w *Workspace) ToHost(p string) string {
	if rel, ok := tree.Inside(w.guestRoot, path.Clean(p)); ok {
		return path.Join(w.shown(), rel)
	}
	return p
}

// HostText rewrites guest paths of the staged copy in free text (compiler errors, stack
// traces) to host paths, so that the agent sees one set of paths.
func (w *Workspace) HostText(s string) string {
	if w.hostRoot == "" || w.shown() == w.guestRoot {
		return s
	}
	return strings.ReplaceAll(s, w.guestRoot, w.shown())
}

// DefaultDir is the host directory used when a tool names none.
func (w *Workspace) DefaultDir() string { return w.defaultDir }
