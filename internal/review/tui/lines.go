package tui

import (
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Line-level choice within a hunk, as lazygit stages lines: "s" on a hunk lists its changed
// lines, all chosen; space leaves one out. A "+" line chosen is written, a "−" line chosen is
// removed; the others stay pending in the guest (review.Decision.Lines).

// errLinesChosen ends a hunk's form when its lines were chosen instead.
var errLinesChosen = errors.New("lines chosen")

// chooseLines asks which changed lines of hunk h of it to take (q: how its hunk's question
// reads): one mark per line of the hunk (context lines: false).
func (r *reviewer) chooseLines(it *review.Item, h int, q hunkQuestion) ([]bool, error) {
	hunk := it.Hunks[h]
	var opts []huh.Option[int]
	var chosen []int
	w, _ := r.size()
	for j, l := range hunk.Lines {
		if l.Op == udiff.Equal {
			continue
		}
		mark := "+"
		if l.Op == udiff.Delete {
			mark = "−"
		}
		text := mark + " " + termsafe.String(strings.TrimSuffix(l.Text, "\n"))
		if !r.accessible {
			text = truncate(text, w-8)
		}
		opts = append(opts, huh.NewOption(text, j))
		chosen = append(chosen, j)
	}
	desc := "A chosen + line is written, a chosen − line is removed; the others stay pending in the guest."
	if hint := r.vHint("space: toggle · v: view diff · enter: continue · esc: abort"); hint != "" {
		desc += "\n" + hint
	}
	ms := huh.NewMultiSelect[int]().
		Title(fmt.Sprintf("Lines of hunk %d of %d to %s", h+1, len(it.Hunks), strings.ToLower(q.yes))).
		Description(desc).
		Options(opts...).
		Value(&chosen)
	if !r.accessible {
		// Layout: group title 1, the field (title 1, description 2, options), blank 1,
		// help 1; one line spare.
		if avail := r.height() - 7; len(opts) > avail {
			ms.Height(max(4, avail+1))
		}
	}
	f := r.form(q.group, ms)
	if r.accessible {
		// huh's accessible list does not print its description: a note says it.
		f = r.form(q.group, huh.NewNote().Description(desc+" Type a line's number to leave it out or take it back; 0 when done."), ms)
	}
	if err := r.runForm(f, func() *doc { return r.itemDoc(it, h) }); err != nil {
		return nil, err
	}
	out := make([]bool, len(hunk.Lines))
	for _, j := range chosen {
		if j >= 0 && j < len(out) {
			out[j] = true
		}
	}
	return out, nil
}

// linesVerdict says what the lines chosen of hunk h make of it: accepted whole (all chosen:
// accept, false), rejected (none: false, false) or taken in part (true, true).
func linesVerdict(h udiff.Hunk, chosen []bool) (accept, some bool) {
	n, total := 0, 0
	for j, l := range h.Lines {
		if l.Op != udiff.Equal {
			total++
			if chosen[j] {
				n++
			}
		}
	}
	switch {
	case n == total:
		return true, false
	case n == 0:
		return false, false
	}
	return true, true
}

// hunksDecision is the decision for it from the hunks accepted (mask) and the lines chosen
// within some of them (lines: nil, or per hunk nil or its lines).
func hunksDecision(it *review.Item, mask []bool, lines [][]bool) review.Decision {
	d := review.Decision{Path: it.Path, Action: review.Accept}
	all, none := true, true
	for _, ok := range mask {
		all = all && ok
		none = none && !ok
	}
	switch {
	case none:
		d.Action = review.Reject
	case lines != nil:
		d.Lines = lines
		if !all {
			d.Hunks = mask
		}
	case !all:
		d.Hunks = mask
	}
	return d
}

// hunksOK says whether the item under the list's cursor is chosen hunk by hunk: an edit of a
// text file (not a conflict).
func (n *listNav) hunksOK() bool {
	i, ok := n.ms.Hovered()
	if !ok || i < 0 || i >= len(n.items) {
		return false
	}
	return lineChoosable(n.items[i])
}

// lineChoosable says whether the hunks and lines of it can be chosen: an edit of a text file
// (not a conflict).
func lineChoosable(it *review.Item) bool {
	return it.Text && len(it.Hunks) > 0 && !it.Conflict && it.Kind != staging.Added && it.Kind != staging.Deleted
}

// hunksFromList is the file list's "h": the hunks (and lines) of the file under the cursor
// are chosen at once, as for a file with several hunks; the file is then selected (or left
// out when nothing of it was taken), and its choice stands unless it is left out later.
func (r *reviewer) hunksFromList(n *listNav, pre map[int]review.Decision) error {
	i, ok := n.ms.Hovered()
	if !ok || i < 0 || i >= len(n.items) || !n.hunksOK() {
		return nil
	}
	it := n.items[i]
	mask, lines, err := r.chooseHunks(it, func(h int) hunkQuestion { return reviewHunk(it, h) })
	if err != nil {
		return err
	}
	d := hunksDecision(it, mask, lines)
	if d.Action == review.Reject {
		delete(pre, i)
	} else {
		pre[i] = d
	}
	if selected := contains(*n.chosen, i); selected == (d.Action == review.Reject) {
		// huh has no call to select an option: its toggle key does it, on the option under
		// the cursor (this one).
		n.ms.Update(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
	}
	n.viewed[i] = true
	n.syncDirs()
	n.relabel(i)
	return nil
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// chosenNote says what was chosen of an item's hunks: "2 of 3 hunks", "3 of 7 changed lines".
func chosenNote(it *review.Item, d review.Decision) string {
	if d.Lines == nil && d.Hunks == nil {
		return "all hunks"
	}
	n, total := 0, 0
	if d.Lines == nil {
		for _, ok := range d.Hunks {
			if ok {
				n++
			}
		}
		return fmt.Sprintf("%d of %d hunks", n, len(d.Hunks))
	}
	for i, h := range it.Hunks {
		for j, l := range h.Lines {
			if l.Op == udiff.Equal {
				continue
			}
			total++
			switch {
			case d.Lines[i] != nil:
				if d.Lines[i][j] {
					n++
				}
			case d.Hunks == nil || d.Hunks[i]:
				n++
			}
		}
	}
	return fmt.Sprintf("%d of %d changed lines", n, total)
}
