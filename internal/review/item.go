// Package review is the only way anything the agent did reaches the host: it builds the
// three-way changeset (baseline × guest now × host now), lets a person choose what to accept
// (all, some files, some hunks; a choice per conflict), and applies exactly that to the host,
// atomically, with backups to undo it, treating everything read from the guest as hostile.
package review

import (
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Item is one path the agent changed, as the person reviews it.
type Item struct {
	// Path is relative to the working directory, slash-separated (validated: local, no "..").
	Path string
	// Display is Path as a list of names shows it (shownPath: quoted with escapes when a
	// character would not print as itself). Every other text of the core (Description,
	// Refused, errors, Report.Refused, Planned.What) carries guest names raw: what prints it
	// passes it through internal/termsafe.
	Display string
	Kind    staging.Kind
	// Base, Guest and Host are the path in the baseline, in the guest now, and on the host now
	// (nil when absent).
	Base, Guest, Host *tree.Entry
	// Conflict says the host changed the path too since the baseline (and differently).
	Conflict bool
	// Text says both sides are text and Hunks (base → guest) can be chosen one by one.
	Text bool
	// BaseText and GuestText are the contents for a text item.
	BaseText, GuestText string
	Hunks               []udiff.Hunk
	// Added and Removed count lines (text items).
	Added, Removed int
	// Description says in one line what happened (for binaries, modes, links, types).
	Description string
	// Refused says why the change cannot be applied (unsafe path or target, special file,
	// .git); a refused item is listed but never applied.
	Refused string
	// From is set on a host directory that does not tell case or Unicode normalization apart
	// (NameRule), when the host's own name for this path is another spelling (readme.md for
	// README.md): its path, baseline and host entries. Accepting the item renames it: From is
	// removed and Path written in the same apply, both or neither. Host is then From's host
	// entry, and the diff is from From's version. A guest deletion of From is part of the item
	// (it is not listed apart).
	From *Item `json:",omitempty"`
	// Moved says From is a rename the agent made (a path deleted and another added with the
	// same or similar content, rename.go), not a spelling the host takes for Path: the host
	// has nothing at Path, and Host is nil; From.Host is the old name's host entry.
	Moved bool `json:",omitempty"`
	// Collides lists the other names the guest has that are one name with Path on the host
	// (a collision): the item is a Conflict, and at most one item of a collision is accepted;
	// the others stay pending in the guest.
	Collides []string `json:",omitempty"`
	// Provenance says which recorded calls produced the change (set by Attribute; nil
	// without a timeline).
	Provenance *timeline.Provenance `json:",omitempty"`

	// src is the session a compare took the item from when it is not the session applied
	// through (compare.go): its content is read from src's guest copy.
	src *staging.Session
	// keepBase says an accepted item leaves the baseline as it is (compare.go: a version
	// taken from another session, which the applied session's copy does not have).
	keepBase bool
}

// Changeset is what a review shows.
type Changeset struct {
	Workdir string
	// Rule is how the host directory tells names apart (as probed); plan applies at most one
	// change per name under it.
	Rule  NameRule
	Items []*Item
	// Ignored lists what the guest changed that is never applied, with why (e.g. .git).
	Ignored []*Item
}

// Summary counts a changeset.
type Summary struct {
	Files, Conflicts, Refused int
	Added, Removed            int // lines
}

// Summary counts the items.
func (cs *Changeset) Summary() Summary {
	var s Summary
	for _, it := range cs.Items {
		s.Files++
		if it.Conflict {
			s.Conflicts++
		}
		if it.Refused != "" {
			s.Refused++
		}
		s.Added += it.Added
		s.Removed += it.Removed
	}
	return s
}

// HostChanged says the host changed the path (for a rename, its old name) since it was staged:
// accepting it overwrites the host's version.
func (it *Item) HostChanged() bool {
	if it.Moved {
		return it.Host != nil || !sameEntry(it.From.Base, it.From.Host)
	}
	b := it.Base
	if it.From != nil {
		b = it.From.Base
	}
	bothDirs := b != nil && b.Type == tree.Dir && it.Host != nil && it.Host.Type == tree.Dir
	return !sameEntry(b, it.Host) && !bothDirs
}

// shownPath is a path as the lists of names show it (Item.Display, Report.Written and
// Report.Guest): as it is, or quoted with escapes when a character would not print as itself
// (termsafe.Path). It is the core's one use of the sanitiser: a name in a list must be one
// string a script and a person compare alike (hence not left to the printer), while every
// sentence the core makes carries guest text raw and is escaped where it is printed.
func shownPath(p string) string { return termsafe.Path(p) }
