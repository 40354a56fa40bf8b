// Package review is the only way anything the agent did reaches the host: it builds the
// three-way changeset (baseline × guest now × host now), lets a person choose what to accept
// (all, some files, some hunks; a choice per conflict), and applies exactly that to the host,
// atomically, with backups to undo it, treating everything read from the guest as hostile.
package review

import (
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Item is one path the agent changed, as the person reviews it.
type Item struct {
	// Path is relative to the working directory, slash-separated (validated: local, no "..").
	Path string
	// Display is Path safe to print on a terminal (control characters and invalid UTF-8
	// escaped).
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
}

// Changeset is what a review shows.
type Changeset struct {
	Workdir string
	Items   []*Item
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
