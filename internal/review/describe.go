package review

import (
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Name is how the item's path is shown in a list of names: Display (the sanitiser's quoted
// form, shownPath), never the raw Path. What prints it still passes it through termsafe
// (escaping it again is harmless).
func (it *Item) Name() string {
	if it.Display != "" {
		return it.Display
	}
	return shownPath(it.Path)
}

// describe is the sentence that says what d does to it ("write a.go (2 of 3 hunks)",
// "overwrite go.mod (conflict: take guest)"), as the final confirmation shows it; "" when d
// leaves everything as it is. It is the one place a decision is put in words for a person.
func describe(it *Item, d Decision) string {
	name := it.Name()
	write := func(verb string) string {
		switch {
		case it.Guest == nil && it.Kind == staging.Deleted:
			return "delete " + name
		case it.Kind == staging.Added:
			return "create " + name
		case it.Kind == staging.LinkChanged:
			if it.Guest != nil && it.Guest.Type == "symlink" {
				return "relink " + name + " → " + string(it.Guest.Target)
			}
			return "relink " + name
		case it.Kind == staging.TypeChanged:
			s := "replace " + name
			if it.Base != nil && it.Guest != nil {
				s += " (" + string(it.Base.Type) + " → " + string(it.Guest.Type) + ")"
			}
			return s
		case it.Kind == staging.ModeChanged:
			s := ""
			if it.Text && len(it.Hunks) > 0 {
				s = verb + " " + name + " and "
			}
			if it.Guest != nil {
				return s + "chmod " + name + " " + tree.ModeString(it.Guest.Mode)
			}
			return s + "chmod " + name
		}
		return verb + " " + name
	}
	if it.From != nil && (d.Action == Accept || d.Action == TakeGuest) {
		s := "rename " + it.From.Name() + " → " + name
		if d.Hunks != nil || d.Lines != nil {
			n, total, unit, _ := choiceCount(it, d)
			s += fmt.Sprintf(" and write it (%d of %d %s)", n, total, unit)
		} else if b := it.From.Base; b == nil || it.Guest == nil || b.Type != it.Guest.Type || b.Hash != it.Guest.Hash || b.Target != it.Guest.Target {
			s += " and write the guest's version"
		}
		return s + collisionNote(it, d)
	}
	switch d.Action {
	case Accept:
		if d.Hunks != nil || d.Lines != nil {
			n, total, unit, _ := choiceCount(it, d)
			return fmt.Sprintf("write %s (%d of %d %s)", name, n, total, unit)
		}
		return write("write")
	case TakeGuest:
		if len(it.Collides) > 0 {
			return write("write") + collisionNote(it, d)
		}
		return write("overwrite") + " (conflict: take guest)"
	case KeepHost:
		return "keep host: " + name + " (copied into the guest)"
	case RejectRevert:
		return "revert in guest: " + name
	}
	return ""
}

// collisionNote says, for the name of a collision that is accepted, what stays pending.
func collisionNote(it *Item, d Decision) string {
	if len(it.Collides) == 0 {
		if d.Action == TakeGuest {
			return " (conflict: take guest)"
		}
		return ""
	}
	var others []string
	for _, o := range it.Collides {
		others = append(others, o)
	}
	verb := " stays"
	if len(others) > 1 {
		verb = " stay"
	}
	return " (collision: " + strings.Join(others, " and ") + verb + " pending in the guest)"
}
