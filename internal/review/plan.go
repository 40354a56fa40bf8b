package review

import (
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Planned is one step of an apply, as the final confirmation and --dry-run show it.
type Planned struct {
	Path string
	// What is what happens to Path, in the words of --dry-run ("write (2 of 3 hunks)").
	What string
	// Sentence says the same with the path in it, as the TUI's confirmation shows it ("write
	// a.go (2 of 3 hunks)").
	Sentence string
	// Pending says nothing happens: the change stays pending in the guest.
	Pending bool
}

// step is what an apply does for one item.
type step struct {
	it       *Item
	dec      Decision
	hostOp   bool        // write the host
	after    *tree.Entry // the host's state after (nil: absent)
	content  []byte      // a file's new content (nil: stream it from the guest)
	baseNext *tree.Entry // the baseline's entry after
	moveBase bool        // update the baseline for this path
	guestOp  string      // "revert" or "keep-host"
	what     string
	// pair is the other half of a rename under the host's name rule (Item.From): the old
	// name's removal and the new name's write stand or fall together. fresh marks the write:
	// the host has the path only under the old name, which is removed first.
	pair  *step
	fresh bool
}

// plan turns decisions into steps; it reads nothing from the host or the guest.
func plan(cs *Changeset, decisions []Decision) ([]*step, []string, error) {
	steps, pending, err := planSteps(cs, decisions)
	if err != nil {
		return nil, nil, err
	}
	if err := onePerName(cs.Rule, steps); err != nil {
		return nil, nil, err
	}
	return steps, pending, nil
}

// planSteps is plan without the check of names that the host takes for one (onePerName).
func planSteps(cs *Changeset, decisions []Decision) ([]*step, []string, error) {
	byPath := map[string]*Item{}
	for _, it := range cs.Items {
		byPath[it.Path] = it
	}
	var steps []*step
	var pending []string
	for _, d := range decisions {
		it := byPath[d.Path]
		if it == nil {
			return nil, nil, fmt.Errorf("no change at %s", d.Path)
		}
		if it.Refused != "" {
			continue
		}
		if it.Conflict && (d.Action == Accept || d.Action == Reject || d.Action == RejectRevert) {
			return nil, nil, fmt.Errorf("%s is a conflict: choose keep-host, take-guest or skip", it.Display)
		}
		if !it.Conflict && (d.Action == KeepHost || d.Action == TakeGuest || d.Action == Skip) {
			return nil, nil, fmt.Errorf("%s is not a conflict: choose accept, reject or reject-revert", it.Display)
		}
		if (it.From != nil || len(it.Collides) > 0) && (d.Action == KeepHost || d.Action == RejectRevert) {
			return nil, nil, fmt.Errorf("%s is one name with another on this host directory (case or Unicode normalization): keep-host and reject-revert are not offered; choose %s", it.Display, map[bool]string{true: "take-guest or skip", false: "accept or reject"}[it.Conflict])
		}
		s := &step{it: it, dec: d}
		switch d.Action {
		case Reject, Skip:
			pending = append(pending, it.Display)
			continue
		case RejectRevert:
			s.guestOp, s.what = "revert", "revert in the guest to the staged version"
		case KeepHost:
			s.guestOp, s.moveBase, s.baseNext = "keep-host", true, hostAsBase(it.Host)
			s.what = "keep the host's version (copied into the guest)"
			if neverStaged(it) {
				// Never copied into the guest (keepHostInGuest): the guest's version goes,
				// and the baseline stays without the path, as the host file was never staged.
				s.moveBase, s.baseNext = false, nil
				s.what = "keep the host's version (the guest's copy is removed; the host's, never staged, is not copied in)"
			}
		case Accept, TakeGuest:
			if (d.Hunks != nil || d.Lines != nil) && !it.Text {
				return nil, nil, fmt.Errorf("%s: hunks and lines are chosen only for an edit of a text file the host has not changed", it.Display)
			}
			if err := s.acceptPlan(); err != nil {
				return nil, nil, err
			}
			if s.after != nil && s.after.Type == tree.File && s.content != nil && bytesHashMismatch(s) {
				return nil, nil, fmt.Errorf("internal error: content of %s does not match its hash", it.Display)
			}
			if it.From != nil {
				// The old name goes first, in the same apply.
				r := &step{it: it.From, dec: d}
				if err := r.acceptPlan(); err != nil {
					return nil, nil, err
				}
				s.pair, r.pair, s.fresh = r, s, true
				s.what = "rename from " + it.From.Path + ", " + s.what
				steps = append(steps, r)
			}
		default:
			return nil, nil, fmt.Errorf("unknown action %q for %s", d.Action, it.Display)
		}
		steps = append(steps, s)
	}
	return steps, pending, nil
}

// onePerName refuses a plan that changes one host name twice under the host's rule (two
// names of a collision accepted, say): the second write would land on the first. A rename's
// two halves are one change.
func onePerName(rule NameRule, steps []*step) error {
	if !rule.folds() {
		return nil
	}
	seen := map[string]*step{}
	for _, s := range steps {
		if !s.hostOp || (s.pair != nil && !s.fresh) {
			continue
		}
		k := rule.key(s.it.Path)
		if o := seen[k]; o != nil {
			return fmt.Errorf("%s and %s are one name on this host directory (case or Unicode normalization): accept at most one of them (the others stay pending in the guest)", o.it.Display, s.it.Display)
		}
		seen[k] = s
	}
	return nil
}

func bytesHashMismatch(s *step) bool {
	return tree.Hash(s.content) != s.after.Hash
}

// hostAsBase is the baseline entry for a path set to the host's version in the guest: its
// mtime is unknown, so change detection compares hashes.
func hostAsBase(h *tree.Entry) *tree.Entry {
	if h == nil {
		return nil
	}
	e := *h
	e.MTime = 0
	return &e
}

// acceptPlan fills in the host write of an accepted change.
func (s *step) acceptPlan() error {
	it, g := s.it, s.it.Guest
	s.hostOp, s.moveBase = true, true
	if g == nil {
		s.after, s.baseNext, s.what = nil, nil, "delete"
		if it.keepBase {
			s.baseNext = it.Base
		}
		return nil
	}
	e := *g
	e.Mode = masked(g.Mode) // never setuid, setgid or sticky, nor what the person's umask forbids
	s.after, s.baseNext = &e, g
	switch g.Type {
	case tree.Symlink:
		s.what = "symlink -> " + string(g.Target)
	case tree.Dir:
		s.what = fmt.Sprintf("create directory (mode %o)", e.Mode)
	case tree.File:
		if it.Kind == staging.ModeChanged && it.Base != nil && it.Base.Hash == g.Hash {
			s.what = fmt.Sprintf("chmod %o", e.Mode)
		} else {
			s.what = "write"
		}
		if it.Host != nil && it.Host.Type == tree.File && it.Kind != staging.ModeChanged && it.Kind != staging.Added && !it.Conflict {
			e.Mode = it.Host.Mode & 0o777 // the content changed, not the mode: keep the host's
		}
		if it.Text || it.GuestText != "" || (g.Size == 0) {
			s.content = []byte(it.GuestText)
			if it.Text && (s.dec.Hunks != nil || s.dec.Lines != nil) {
				if err := checkChoice(it, s.dec); err != nil {
					return err
				}
				text, err := applyChosen(it, s.dec)
				if err != nil {
					return err
				}
				s.content = []byte(text)
				if n, total, unit, partial := choiceCount(it, s.dec); partial {
					s.what = fmt.Sprintf("write (%d of %d %s)", n, total, unit)
					// The rest stays pending: the baseline becomes what the host now has.
					nb := e
					nb.MTime, nb.Size = 0, int64(len(s.content))
					s.baseNext = &nb
				}
			}
			e.Hash, e.Size = tree.Hash(s.content), int64(len(s.content))
			if s.baseNext != g {
				s.baseNext.Hash = e.Hash
			}
		}
	}
	if it.keepBase {
		s.baseNext = it.Base
	}
	return nil
}

// Plan describes what applying decisions would do, without doing it.
func Plan(cs *Changeset, decisions []Decision) ([]Planned, error) {
	steps, pending, err := plan(cs, decisions)
	if err != nil {
		return nil, err
	}
	var out []Planned
	for _, s := range steps {
		if s.pair != nil && !s.fresh {
			continue // said by the rename's other half
		}
		out = append(out, Planned{Path: s.it.Display, What: s.what, Sentence: describe(s.it, s.dec)})
	}
	for _, p := range pending {
		out = append(out, Planned{Path: p, What: "leave pending in the guest", Pending: true})
	}
	return out, nil
}

// neverStaged says the host's version of a conflict is a file or link that was never staged.
func neverStaged(it *Item) bool {
	return it.Base == nil && it.Host != nil && it.Host.Type != tree.Dir
}
