package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
)

// listNav is what the file list adds to huh's multi-select for a large change: "viewed"
// marks (v marks the file it shows, m marks or unmarks the one under the cursor and goes to
// the next unviewed), a progress line, n for the next unviewed file and c for the next
// conflict. Viewed marks only help a person find their way: they choose nothing.
type listNav struct {
	ms      *huh.MultiSelect[int]
	items   []*review.Item
	viewed  []bool
	chosen  *[]int
	label   func(i int, viewed bool) string // an item's label in the list
	note    func(i int) string              // what the label says after the item (the tree's rows)
	width   int                             // the screen's width
	screenH int                             // and height
	height  func() int                      // the list's height for its rows now (nil: huh's)
	help    string                          // the description's last line (the keys huh's help does not say)
	// opts are the options huh shows: the very slice given to it (huh keeps it, and draws
	// from it), so that a viewed mark is a change of one label in place. Options() again
	// would put the cursor on the first selected option, and moving it back across 500
	// files takes seconds.
	opts []huh.Option[int]
	// The tree ("t", filetree.go): rows grouped by directory, collapsible. order is what
	// each option stands for (an item's index, or a directory's row: dirValue), posOf the
	// other way round; hiddenSel the selection of the items in collapsed directories.
	tree      *fileTree
	order     []int
	posOf     map[int]int
	hiddenSel map[int]bool
}

func (n *listNav) progress() string {
	v, c := 0, 0
	for i, it := range n.items {
		if n.viewed[i] {
			v++
		}
		if it.Conflict {
			c++
		}
	}
	s := fmt.Sprintf("viewed %d of %d", v, len(n.items))
	if c > 0 {
		s += fmt.Sprintf(" · %d %s", c, map[bool]string{true: "conflict", false: "conflicts"}[c == 1])
	}
	s += " · n: next unviewed · m: mark viewed · h: hunks, lines"
	switch {
	case n.tree != nil && n.tree.on:
		s += " · t: flat list · ←/→: fold"
	case n.tree != nil:
		s += " · t: tree"
	}
	return s
}

// options are the list's options (labels with viewed marks, selection): the files, or the
// tree's rows when it is shown.
func (n *listNav) options() []huh.Option[int] {
	sel := n.selection()
	n.order = n.order[:0]
	if n.tree != nil && n.tree.on {
		n.order = n.tree.rows(n.order)
	} else {
		for i := range n.items {
			n.order = append(n.order, i)
		}
	}
	n.posOf = make(map[int]int, len(n.order))
	n.hiddenSel = map[int]bool{}
	var visible []int
	for p, v := range n.order {
		n.posOf[v] = p
		if v >= 0 && sel[v] {
			visible = append(visible, v)
		}
	}
	for i := range n.items {
		if _, shown := n.posOf[i]; !shown && sel[i] {
			n.hiddenSel[i] = true
		}
	}
	*n.chosen = visible
	n.opts = make([]huh.Option[int], len(n.order))
	for p, v := range n.order {
		l := ""
		if v < 0 {
			l = n.tree.dirLabel(n, v, sel)
		} else {
			l = n.rowLabel(v)
		}
		n.opts[p] = huh.NewOption(l, v).Selected(n.rowSelected(v, sel))
	}
	return n.opts
}

// selection is which items are selected now: the shown ones as huh has them, the others as
// they were when their directory was collapsed.
func (n *listNav) selection() map[int]bool {
	sel := map[int]bool{}
	for _, i := range *n.chosen {
		if i >= 0 {
			sel[i] = true
		}
	}
	for i, ok := range n.hiddenSel {
		sel[i] = sel[i] || ok
	}
	return sel
}

// rowLabel is the label of option value v: an item's, or a directory row's.
func (n *listNav) rowLabel(v int) string {
	if v < 0 {
		return n.tree.dirLabel(n, v, nil)
	}
	if n.tree != nil && n.tree.on {
		return n.tree.itemLabel(n, v)
	}
	return n.label(v, n.viewed[v])
}

// rowSelected says whether row v shows as selected: an item as it is, a directory when
// every file in it is.
func (n *listNav) rowSelected(v int, sel map[int]bool) bool {
	if v >= 0 {
		return sel[v]
	}
	for _, i := range n.tree.dirs[dirIndex(v)].items {
		if !sel[i] {
			return false
		}
	}
	return true
}

// selected is the final selection, shown or not.
func (n *listNav) selected() []int {
	var out []int
	for i, ok := range n.selection() {
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// description is the list's description: the progress line, then help.
func (n *listNav) description() string {
	if n.help == "" {
		return n.progress()
	}
	return n.progress() + "\n" + n.help
}

// relabel shows item i's viewed mark and the progress as they are now; the form shows them
// when it next updates (relabelMsg). If huh ever copied the options, the marks would not show
// and nothing else would change (the progress line still counts).
func (n *listNav) relabel(i int) {
	if p, ok := n.posOf[i]; ok {
		n.opts[p].Key = n.rowLabel(i)
	} else if n.posOf == nil {
		n.opts[i].Key = n.label(i, n.viewed[i])
	}
	if n.tree != nil && n.tree.on {
		for _, d := range n.tree.dirsOf[i] {
			if p, ok := n.posOf[dirValue(d)]; ok {
				n.opts[p].Key = n.rowLabel(dirValue(d))
			}
		}
	}
	n.ms.Description(n.description())
}

// relabelMsg makes the form draw its options again (huh's group rebuilds its view on every
// message).
type relabelMsg struct{}

func (m *formModel) redraw() {
	f, _ := m.form.Update(relabelMsg{})
	if ff, ok := f.(*huh.Form); ok {
		m.form = ff
	}
}

// next is the first item after cur (wrapping, in the order the list shows them, shown or in
// a collapsed directory) that is unviewed ("n") or a conflict ("c"). cur may be a directory's
// row: the search starts at its first file.
func (n *listNav) next(cur int, key string) (int, bool) {
	order := n.itemOrder()
	at := -1
	for k, i := range order {
		if i == cur {
			at = k
		}
	}
	if cur < 0 && n.tree != nil {
		if d := n.tree.dirs[dirIndex(cur)]; len(d.items) > 0 {
			for k, i := range order {
				if i == d.items[0] {
					at = k - 1
				}
			}
		}
	}
	for k := 1; k <= len(order); k++ {
		i := order[(at+k+len(order))%len(order)]
		if (key == "n" && !n.viewed[i]) || (key == "c" && n.items[i].Conflict) {
			return i, true
		}
	}
	return 0, false
}

// itemOrder is every item in the order the list shows them.
func (n *listNav) itemOrder() []int {
	if n.tree != nil && n.tree.on {
		return n.tree.itemOrder
	}
	out := make([]int, len(n.items))
	for i := range out {
		out[i] = i
	}
	return out
}

// navKey handles the list's keys in m; false when key is not one of them.
func (m *formModel) navKey(key string) bool {
	n := m.nav
	cur, ok := n.ms.Hovered()
	if !ok {
		return key == "n" || key == "c" || key == "m"
	}
	if m.treeKey(key, cur) {
		return true
	}
	switch key {
	case "n", "c":
		if t, ok := n.next(cur, key); ok {
			if _, shown := n.posOf[t]; !shown && n.tree != nil {
				n.tree.expandTo(t)
				m.rebuild()
			}
			m.moveTo(t)
		}
	case "m":
		if cur < 0 {
			return true // a directory's row
		}
		n.viewed[cur] = !n.viewed[cur]
		n.relabel(cur)
		m.redraw()
		t := cur
		if n.viewed[cur] {
			if u, ok := n.next(cur, "n"); ok {
				t = u
			}
		}
		m.moveTo(t)
	default:
		return false
	}
	return true
}

// moveTo moves the list's cursor to option value: a row or two by keys, farther placed
// directly (listsel.go); the form draws once at the end.
func (m *formModel) moveTo(value int) {
	defer m.redraw()
	n := m.nav
	t, ok := n.posOf[value]
	if !ok {
		return
	}
	cur, ok := n.ms.Hovered()
	p, shown := n.posOf[cur]
	if ok && shown && max(t-p, p-t) <= 2 {
		for k := 0; p != t && k < 2; k, p = k+1, n.posOf[cur] {
			k := tea.KeyMsg{Type: tea.KeyDown}
			if t < p {
				k = tea.KeyMsg{Type: tea.KeyUp}
			}
			n.ms.Update(k)
			if cur, ok = n.ms.Hovered(); !ok {
				return
			}
		}
		return
	}
	n.place(value)
}
