package tui

import (
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"
)

// The file list's selection, kept off huh's quadratic paths (docs/benchmarks.md, "The review
// TUI with 500 changed files"). huh marks the selected options by comparing every option with
// every value its accessor returns (when the value is bound and each time options are given),
// and it has no call to put the cursor on an option: moving it by keys draws every option
// after each key, so a jump across n files cost about n/15 draws of n options.
//
// Here the options carry their selected state themselves (huh.Option.Selected), the accessor
// only receives what huh reports, and the cursor is placed by giving huh the options with
// only the target selected for a moment (huh puts the cursor on the first selected option)
// and then their real state back, in place: the slice huh keeps is listNav.opts.

// chosenAccessor gives huh the list's chosen values to write, and nothing to compare with:
// the options say which are selected.
type chosenAccessor struct{ chosen *[]int }

func (a chosenAccessor) Get() []int              { return nil }
func (a chosenAccessor) Set(v []int)             { *a.chosen = v }
func (n *listNav) accessor() huh.Accessor[[]int] { return chosenAccessor{n.chosen} }

// place puts huh's cursor on option value v (shown); false when v is not shown.
func (n *listNav) place(v int) bool {
	p, ok := n.posOf[v]
	if !ok || p >= len(n.opts) {
		return false
	}
	// A filter typed before (/) goes: the options given anew are all shown, and the row may
	// be one the filter hides. (huh's key clears it; without a filter it does nothing.)
	n.ms.Update(tea.KeyMsg{Type: tea.KeyEsc})
	sel := n.selection()
	for q := range n.opts {
		n.opts[q] = n.opts[q].Selected(q == p)
	}
	n.ms.Options(n.opts...)
	for q, w := range n.order {
		n.opts[q] = n.opts[q].Selected(n.rowSelected(w, sel))
	}
	// huh lays the view out with the target at its top, even in the last page: one key up
	// and one down let it bring the view back within the list (and show the row above).
	_ = n.ms.View()
	if p > 0 {
		n.ms.Update(tea.KeyMsg{Type: tea.KeyUp})
		n.ms.Update(tea.KeyMsg{Type: tea.KeyDown})
	}
	return true
}
