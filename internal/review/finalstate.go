package review

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// maxLinkHops is how many symbolic links one resolution follows before it is taken for a loop
// (Linux's limit; a loop resolves nowhere, so it cannot lead out).
const maxLinkHops = 40

// finalTree answers "what is at this path" in the tree an apply would leave: the planned
// entries where the plan writes, the host's own entries elsewhere. Nothing is written.
type finalTree struct {
	host    *hostTree
	planned map[string]*tree.Entry // path → its entry after the apply (nil: absent)
	// hostBefore is each planned path's host entry as reviewed (nil: absent).
	hostBefore map[string]*tree.Entry
	// touched collects the planned paths that decided an answer of lookup, so that an escape
	// can be blamed on the steps it goes through.
	touched map[string]bool
}

func newFinalTree(host *hostTree, steps []*step, refused map[*step]string) *finalTree {
	ft := &finalTree{host: host, planned: map[string]*tree.Entry{}, hostBefore: map[string]*tree.Entry{}}
	for _, s := range steps {
		if s.hostOp && refused[s] == "" {
			ft.planned[s.it.Path] = s.after
			ft.hostBefore[s.it.Path] = s.it.Host
		}
	}
	return ft
}

func (ft *finalTree) touch(p string) {
	if ft.touched != nil {
		ft.touched[p] = true
	}
}

// lookup is the entry at p (a clean relative path) after the apply, nil when absent. Below a
// planned path that is not a directory, or that becomes one where the host had something
// else, only planned entries exist.
func (ft *finalTree) lookup(p string) (*tree.Entry, error) {
	if e, ok := ft.planned[p]; ok {
		ft.touch(p)
		return e, nil
	}
	for a := path.Dir(p); a != "."; a = path.Dir(a) {
		e, ok := ft.planned[a]
		if !ok {
			continue
		}
		if b := ft.hostBefore[a]; e == nil || e.Type != tree.Dir || b == nil || b.Type != tree.Dir {
			ft.touch(a)
			return nil, nil
		}
	}
	return ft.host.lstat(p)
}

// escapes says whether following the path p (every symbolic link on the way, p's own
// included) in the final tree leads outside the working directory. A missing component is
// taken for a directory (what could be created there later cannot make ".." climb less), and
// an absolute target always leads out.
func (ft *finalTree) escapes(p string) (bool, error) {
	var cur []string
	comps := strings.Split(p, "/")
	hops := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return true, nil
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := strings.Join(append(cur[:len(cur):len(cur)], c), "/")
		e, err := ft.lookup(next)
		if err != nil {
			return false, err
		}
		if e != nil && e.Type == tree.Symlink {
			if hops++; hops > maxLinkHops {
				return false, nil
			}
			t := string(e.Target)
			if t == "" || strings.HasPrefix(t, "/") {
				return true, nil
			}
			comps = append(strings.Split(t, "/"), comps...)
			continue
		}
		cur = append(cur, c)
	}
	return false, nil
}

// guardFinalState checks the tree the steps would leave, not each step alone, and returns the
// steps to refuse, with why:
//   - every symbolic link in it, planned or the host's own, is followed through any chain:
//     a planned link that leads outside the working directory is refused, and so are the
//     steps a host link goes through when it led inside before and would lead outside after;
//   - no directory may become one that git discovers as a repository;
//   - a step that replaces, removes or creates a directory is one unit with every step below
//     it: when one of them is refused, all are.
//
// It repeats until nothing more is refused (each refusal changes the final tree).
func guardFinalState(host *hostTree, steps []*step, refused map[*step]string) error {
	hostLinks, err := host.symlinks()
	if err != nil {
		return fmt.Errorf("listing the host's symbolic links: %w", err)
	}
	stepAt := map[string]*step{}
	for _, s := range steps {
		if s.hostOp {
			stepAt[s.it.Path] = s
		}
	}
	before := newFinalTree(host, nil, nil)
	for {
		n := len(refused)
		ft := newFinalTree(host, steps, refused)
		cand := map[string]bool{}
		for _, l := range hostLinks {
			cand[l] = true
		}
		for p, e := range ft.planned {
			if e != nil && e.Type == tree.Symlink {
				cand[p] = true
			}
		}
		for _, l := range sortedKeys(cand) {
			e, err := ft.lookup(l)
			if err != nil {
				return err
			}
			if e == nil || e.Type != tree.Symlink {
				continue
			}
			ft.touched = map[string]bool{}
			out, err := ft.escapes(l)
			touched := ft.touched
			ft.touched = nil
			if err != nil {
				return err
			}
			if !out {
				continue
			}
			if s := stepAt[l]; s != nil && ft.planned[l] != nil {
				refuse(refused, s, fmt.Sprintf("symlink -> %s would lead outside the working directory (followed through every link after the apply): never created on the host", string(e.Target)))
				continue
			}
			if was, err := before.escapes(l); err != nil {
				return err
			} else if was {
				continue // the host's own link already led outside: not the review's doing
			}
			if len(touched) == 0 {
				return fmt.Errorf("internal error: the host's link %s would lead outside the working directory, through no planned change", l)
			}
			for p := range touched {
				refuse(refused, stepAt[p], fmt.Sprintf("would make the host's symlink %s lead outside the working directory", l))
			}
		}
		if err := guardRepositories(ft, steps, refused); err != nil {
			return err
		}
		refuseUnits(steps, refused)
		if len(refused) == n {
			return nil
		}
	}
}

// guardRepositories refuses the steps that would give a directory all of git's repository
// markers (HEAD, objects/, refs/): git would then take it for a repository and read its
// config.
func guardRepositories(ft *finalTree, steps []*step, refused map[*step]string) error {
	markers := map[string][]*step{} // directory → planned steps creating a marker in it
	for _, s := range steps {
		if !s.hostOp || refused[s] != "" || s.after == nil {
			continue
		}
		base := path.Base(s.it.Path)
		for _, m := range repoMarkers {
			if strings.EqualFold(base, m) {
				markers[path.Dir(s.it.Path)] = append(markers[path.Dir(s.it.Path)], s)
			}
		}
	}
	for dir, ss := range markers {
		complete := true
		for _, m := range repoMarkers {
			found := false
			for _, s := range ss {
				found = found || strings.EqualFold(path.Base(s.it.Path), m)
			}
			if !found {
				e, err := ft.lookup(path.Join(dir, m))
				if err != nil {
					return err
				}
				found = e != nil
			}
			complete = complete && found
		}
		if complete {
			for _, s := range ss {
				refuse(refused, s, refusedBareRepo)
			}
		}
	}
	return nil
}

// unitRoot says whether a step changes what kind of thing its path is, from or to a
// directory: it then stands or falls with every step below it.
func unitRoot(s *step) bool {
	wasDir := s.it.Host != nil && s.it.Host.Type == tree.Dir
	isDir := s.after != nil && s.after.Type == tree.Dir
	return s.hostOp && wasDir != isDir
}

// refuseUnits spreads refusals across units: a refused step refuses the steps below it when
// it is a unit root, the unit roots above it, and the other half of its rename.
func refuseUnits(steps []*step, refused map[*step]string) {
	byPath := map[string]*step{}
	var paths []string
	var queue []*step
	for _, s := range steps {
		if !s.hostOp {
			continue
		}
		byPath[s.it.Path] = s
		paths = append(paths, s.it.Path)
		if refused[s] != "" {
			queue = append(queue, s)
		}
	}
	sort.Strings(paths)
	add := func(s, r *step) {
		if refused[s] == "" {
			refused[s] = fmt.Sprintf("not applied: it goes with %s, which is refused (%s)", r.it.Path, refused[r])
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		if unitRoot(r) {
			prefix := r.it.Path + "/"
			for i := sort.SearchStrings(paths, prefix); i < len(paths) && strings.HasPrefix(paths[i], prefix); i++ {
				add(byPath[paths[i]], r)
			}
		}
		for a := path.Dir(r.it.Path); a != "."; a = path.Dir(a) {
			if u := byPath[a]; u != nil && unitRoot(u) {
				add(u, r)
			}
		}
		if r.pair != nil && r.pair.hostOp {
			add(r.pair, r) // a rename is both halves or neither
		}
	}
}

func refuse(refused map[*step]string, s *step, why string) {
	if s != nil && refused[s] == "" {
		refused[s] = why
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// symlinks lists every symbolic link in the host's working directory (relative paths), except
// inside git's own directories, which a review never writes.
func (h *hostTree) symlinks() ([]string, error) {
	var out []string
	err := filepath.WalkDir(h.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrPermission) && p != h.dir {
				return nil // unreadable to the person too: nothing a review can reach
			}
			return err
		}
		if d.IsDir() && p != h.dir && staging.IsDotGit(d.Name()) {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 {
			rel, err := filepath.Rel(h.dir, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}
