package tui

import (
	"strings"

	"github.com/charmbracelet/huh"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
)

// Hunks and lines in accessible mode, which has no keys beside the prompts: what "s" (split
// a hunk into its lines) and the file list's "h" (the hunks and lines of a file) do in the
// full-screen UI are questions here. Each hunk is accepted, rejected or split; a split hunk
// lists its changed lines, numbered, all chosen, and typing a number leaves one out
// (chooseLines). Files with several hunks get the per-file question already (perFile: choose
// hunks one by one); a file with one hunk is offered once, in a list after the file list.

// Answers to a hunk's question.
const (
	hunkAccept = "accept"
	hunkReject = "reject"
	hunkLines  = "lines"
)

// accessibleHunk asks what to do with hunk h of it (q: how its question reads): accept
// (take) it (true, nil), reject (leave) it (false, nil), or choose its lines (linesVerdict's
// answer and the lines, when only some were taken).
func (r *reviewer) accessibleHunk(it *review.Item, h int, q hunkQuestion) (ok bool, lines []bool, err error) {
	choice := hunkAccept
	if !q.take {
		choice = hunkReject
	}
	note := huh.NewNote().
		Title(q.heading).
		Description(r.preview(it, h, 0))
	sel := huh.NewSelect[string]().
		Title(q.heading+": what should happen?").
		Options(
			huh.NewOption(strings.ToLower(q.yes)+" the hunk", hunkAccept),
			huh.NewOption(strings.ToLower(q.no)+" the hunk (it stays pending in the guest)", hunkReject),
			huh.NewOption("choose its lines one by one", hunkLines),
		).
		Value(&choice)
	if err := r.runForm(r.form(q.group, note, sel), nil); err != nil {
		return false, nil, err
	}
	switch choice {
	case hunkReject:
		return false, nil, nil
	case hunkLines:
		split, err := r.chooseLines(it, h, q)
		if err != nil {
			return false, nil, err
		}
		ok, some := linesVerdict(it.Hunks[h], split)
		if some {
			return ok, split, nil
		}
		return ok, nil, nil
	}
	return true, nil, nil
}

// lineFiles (accessible mode) offers the selected files with one hunk whose lines can be
// chosen (the others are asked about one by one, perFile); for each one taken, its hunk's
// question (accessibleHunk). The decisions go into pre, by index in items, as the full-screen
// list's "h" puts them; a file of which nothing was taken is left out of selected.
func (r *reviewer) lineFiles(items []*review.Item, selected []bool, pre map[int]review.Decision) error {
	var opts []huh.Option[int]
	for i, it := range items {
		if selected[i] && len(it.Hunks) == 1 && lineChoosable(it) {
			opts = append(opts, huh.NewOption(label(it), i))
		}
	}
	if len(opts) == 0 {
		return nil
	}
	var chosen []int
	ms := huh.NewMultiSelect[int]().
		Title("Choose lines within any of these files? (the ones not chosen are taken whole)").
		Options(opts...).
		Value(&chosen)
	if err := r.runForm(r.form("Files with one hunk", ms), nil); err != nil {
		return err
	}
	for _, i := range chosen {
		if i < 0 || i >= len(items) {
			continue
		}
		it := items[i]
		ok, lines, err := r.accessibleHunk(it, 0, reviewHunk(it, 0))
		if err != nil {
			return err
		}
		var ls [][]bool
		if lines != nil {
			ls = [][]bool{lines}
		}
		d := hunksDecision(it, []bool{ok}, ls)
		if d.Action == review.Reject {
			selected[i] = false
			delete(pre, i)
			continue
		}
		pre[i] = d
	}
	return nil
}
