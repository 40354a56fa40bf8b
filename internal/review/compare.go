package review

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// A compare reviews several sessions of one working directory together (forks of one
// session, each tried by an agent): for every path, each session's version, of which the
// person takes one, or hunks of several; the picks become one apply to the host, through the
// first session (Apply, with its checks, backups and undo). A version taken from another
// session is read from that session's guest copy and checked against its hash like any other;
// it leaves the first session's baseline as it was, so that session's own change there, if
// any, shows as a conflict with the host afterwards. The sessions themselves are not changed:
// the ones not kept are discarded (`discard --all-but`).

// Compared is what a compare shows: each session's changeset, and the paths any of them changed.
type Compared struct {
	Workdir string
	// Names are the sessions' names, in order; the first is the one applied through.
	Names []string
	// Sets are the sessions' changesets, in the same order.
	Sets []*Changeset
	// Paths are the changed paths, sorted.
	Paths    []*ComparedPath
	sessions []*staging.Session
}

// ComparedPath is a path changed in one session or more.
type ComparedPath struct {
	Path    string
	Display string
	// Items has one entry per session: its change, or nil where the session left the path.
	Items []*Item
	// Variants groups the sessions that changed the path by result (the same version), in
	// the order of their first session.
	Variants [][]int
}

// Pick is what the person takes of one path in a compare.
type Pick struct {
	Path string
	// Session is the index of the session whose version is taken; -1 takes none (every
	// session's change stays pending). Ignored when Hunks is set.
	Session int
	// Hunks takes hunks of several sessions' edits of a text file: one entry per session,
	// nil for a session none are taken of, else one per hunk of its change.
	Hunks [][]bool `json:",omitempty"`
	// Lines, with Hunks, takes lines within hunks, as a review's Decision.Lines does
	// (lines.go): one entry per session, nil or one per hunk of its change, nil or one mark
	// per line of the hunk; a hunk's lines, when given, say what is taken of it, whatever
	// Hunks says.
	Lines [][][]bool `json:",omitempty"`
}

// BuildCompared builds the changeset of every session (Build) and lines them up by path.
// The sessions must have one baseline at every path one of them changed (forks that none has
// applied or synced since): their changes are then against the same host state.
func BuildCompared(ctx context.Context, sessions []*staging.Session, names []string, paths []string) (*Compared, error) {
	if len(sessions) < 2 || len(sessions) != len(names) {
		return nil, fmt.Errorf("a compare needs two sessions or more, %d given", len(sessions))
	}
	c := &Compared{Names: names, sessions: sessions, Workdir: sessions[0].State.Workdir}
	byPath := map[string]*ComparedPath{}
	for i, s := range sessions {
		if s.State.Workdir != c.Workdir {
			return nil, fmt.Errorf("session %s is of %s, not of %s", names[i], s.State.Workdir, c.Workdir)
		}
		cs, err := Build(ctx, s, paths)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", names[i], err)
		}
		c.Sets = append(c.Sets, cs)
		for _, it := range cs.Items {
			cp := byPath[it.Path]
			if cp == nil {
				cp = &ComparedPath{Path: it.Path, Display: it.Display, Items: make([]*Item, len(sessions))}
				byPath[it.Path] = cp
				c.Paths = append(c.Paths, cp)
			}
			cp.Items[i] = it
		}
	}
	// One baseline: every path changed (and a rename's old name) has one baseline entry.
	var differ []string
	bases := make([]map[tree.Name]*tree.Entry, len(sessions))
	for i, s := range sessions {
		bases[i] = s.Baseline.Index()
	}
	for _, cp := range c.Paths {
		for _, p := range touched(cp) {
			var first *tree.Entry
			for i := range sessions {
				e := bases[i][tree.Name(p)]
				if i == 0 {
					first = e
				} else if !sameEntry(first, e) && !(first != nil && e != nil && first.Type == tree.Dir && e.Type == tree.Dir) {
					differ = append(differ, p)
					break
				}
			}
		}
	}
	if len(differ) > 0 {
		sort.Strings(differ)
		return nil, fmt.Errorf("the sessions' baselines differ at %s (one of them applied or synced since they were forked), so their changes there are against different host states: review them one at a time (`review --session NAME`)", strings.Join(headOf(differ, 5), ", "))
	}
	sort.Slice(c.Paths, func(a, b int) bool { return c.Paths[a].Path < c.Paths[b].Path })
	for _, cp := range c.Paths {
		for i, it := range cp.Items {
			if it == nil {
				continue
			}
			found := false
			for k, v := range cp.Variants {
				if sameVersion(cp.Items[v[0]], it) {
					cp.Variants[k] = append(v, i)
					found = true
					break
				}
			}
			if !found {
				cp.Variants = append(cp.Variants, []int{i})
			}
		}
	}
	return c, nil
}

// touched is every host path a compared path's changes write: the path, and the old names of
// renames.
func touched(cp *ComparedPath) []string {
	out := []string{cp.Path}
	for _, it := range cp.Items {
		if it != nil && it.From != nil && it.From.Path != cp.Path {
			out = append(out, it.From.Path)
		}
	}
	return out
}

func headOf(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

// sameVersion says two sessions' changes of a path end in the same version.
func sameVersion(a, b *Item) bool {
	if (a.From == nil) != (b.From == nil) || a.From != nil && a.From.Path != b.From.Path {
		return false
	}
	if a.Guest == nil || b.Guest == nil {
		return a.Guest == nil && b.Guest == nil
	}
	return a.Guest.Type == b.Guest.Type && a.Guest.Mode&0o777 == b.Guest.Mode&0o777 && a.Guest.Hash == b.Guest.Hash && a.Guest.Target == b.Guest.Target
}

// Mergeable says which sessions' edits of the path can be taken hunk by hunk together: two
// or more, each an edit of a text file the host has not changed.
func (cp *ComparedPath) Mergeable() bool {
	n := 0
	for _, it := range cp.Items {
		if it == nil {
			continue
		}
		if !it.Text || it.Refused != "" || it.From != nil {
			return false
		}
		n++
	}
	return n >= 2
}

// Session is the session of index i.
func (c *Compared) Session(i int) *staging.Session { return c.sessions[i] }

// Merge turns the picks into one changeset and its decisions, for Plan and for Apply through
// the first session. A path without a pick is left: every session's change of it stays
// pending. It refuses picks that would write one host path twice, hunks of several sessions
// that change the same lines, and a version refused in its own session.
func (c *Compared) Merge(picks []Pick) (*Changeset, []Decision, error) {
	byPath := map[string]*ComparedPath{}
	for _, cp := range c.Paths {
		byPath[cp.Path] = cp
	}
	out := &Changeset{Workdir: c.Workdir, Rule: c.Sets[0].Rule}
	var ds []Decision
	writes := map[string]string{} // host path → the path picked that writes it
	seen := map[string]bool{}
	for _, p := range picks {
		cp := byPath[p.Path]
		if cp == nil {
			return nil, nil, fmt.Errorf("no session changed %s", p.Path)
		}
		if seen[p.Path] {
			return nil, nil, fmt.Errorf("%s is picked twice", cp.Display)
		}
		seen[p.Path] = true
		var it *Item
		var d Decision
		switch {
		case p.Hunks != nil || p.Lines != nil:
			var err error
			if it, d, err = c.mergeHunks(cp, p); err != nil {
				return nil, nil, err
			}
			if it == nil {
				continue // no hunk taken
			}
		case p.Session < 0:
			continue
		case p.Session >= len(c.Names) || cp.Items[p.Session] == nil:
			return nil, nil, fmt.Errorf("%s: session %d did not change it", cp.Display, p.Session)
		default:
			it = c.taken(cp.Items[p.Session], p.Session)
			d = Decision{Path: it.Path, Action: Accept}
		}
		if it.Refused != "" {
			return nil, nil, fmt.Errorf("%s: not applied: %s", it.Display, it.Refused)
		}
		if it.Conflict {
			d.Action = TakeGuest
		}
		for _, w := range []*Item{it, it.From} {
			if w == nil {
				continue
			}
			if o, ok := writes[w.Path]; ok {
				return nil, nil, fmt.Errorf("%s and %s both write %s: pick one of them", o, it.Display, w.Display)
			}
			writes[w.Path] = it.Display
		}
		out.Items = append(out.Items, it)
		ds = append(ds, d)
	}
	return out, ds, nil
}

// taken is the item of session i as the merged changeset holds it: the first session's own,
// or a copy that reads its content from session i and leaves the baseline as it is.
func (c *Compared) taken(it *Item, i int) *Item {
	if i == 0 {
		return it
	}
	var src *staging.Session
	if i < len(c.sessions) {
		src = c.sessions[i]
	}
	cp := *it
	cp.src, cp.keepBase = src, true
	if it.From != nil {
		from := *it.From
		from.src, from.keepBase = src, true
		cp.From = &from
	}
	return &cp
}

// Source says which session a merged changeset's item comes from, for the confirmation:
// "try2", or "try1 and try2" for a merge.
func (c *Compared) Source(p Pick) string {
	if p.Hunks == nil && p.Lines == nil {
		if p.Session >= 0 && p.Session < len(c.Names) {
			return c.Names[p.Session]
		}
		return ""
	}
	var names []string
	for _, cp := range c.Paths {
		if cp.Path != p.Path {
			continue
		}
		for i := range c.Names {
			if i < len(cp.Items) && cp.Items[i] != nil && p.takes(cp.Items[i], i) {
				names = append(names, c.Names[i])
			}
		}
	}
	return strings.Join(names, " and ")
}
