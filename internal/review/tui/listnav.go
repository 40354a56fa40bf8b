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
	ms     *huh.MultiSelect[int]
	items  []*review.Item
	viewed []bool
	chosen *[]int
	label  func(i int, viewed bool) string // an item's label in the list
	help   string                          // the description's last line (the keys huh's help does not say)
	// opts are the options huh shows: the very slice given to it (huh keeps it, and draws
	// from it), so that a viewed mark is a change of one label in place. Options() again
	// would put the cursor on the first selected option, and moving it back across 500
	// files takes seconds.
	opts []huh.Option[int]
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
	return s + " · n: next unviewed · m: mark viewed · h: hunks, lines"
}

// options are the list's options, made once (labels with viewed marks, selection).
func (n *listNav) options() []huh.Option[int] {
	sel := map[int]bool{}
	for _, i := range *n.chosen {
		sel[i] = true
	}
	n.opts = make([]huh.Option[int], len(n.items))
	for i := range n.items {
		n.opts[i] = huh.NewOption(n.label(i, n.viewed[i]), i).Selected(sel[i])
	}
	return n.opts
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
	n.opts[i].Key = n.label(i, n.viewed[i])
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

// next is the first item after cur (wrapping) that is unviewed ("n") or a conflict ("c").
func (n *listNav) next(cur int, key string) (int, bool) {
	for k := 1; k <= len(n.items); k++ {
		i := (cur + k) % len(n.items)
		if (key == "n" && !n.viewed[i]) || (key == "c" && n.items[i].Conflict) {
			return i, true
		}
	}
	return 0, false
}

// navKey handles the list's keys in m; false when key is not one of them.
func (m *formModel) navKey(key string) bool {
	n := m.nav
	cur, ok := n.ms.Hovered()
	if !ok {
		return key == "n" || key == "c" || key == "m"
	}
	switch key {
	case "n", "c":
		if t, ok := n.next(cur, key); ok {
			m.moveTo(t)
		}
	case "m":
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

// moveTo moves the list's cursor to option t, as the keys would (huh has no call to put the
// cursor on an option): from the top or the bottom when nearer, by half pages (ctrl+d/ctrl+u)
// while far, then line by line. The keys go to the field itself (the form would draw every
// option after each of them); the form draws once at the end.
func (m *formModel) moveTo(t int) {
	defer m.redraw()
	if cur, ok := m.nav.ms.Hovered(); ok {
		// From the nearest of where it is, the top and the bottom.
		last := len(m.nav.items) - 1
		d := max(t-cur, cur-t)
		var k tea.KeyMsg
		switch {
		case t < d:
			k = tea.KeyMsg{Type: tea.KeyHome}
		case last-t < d:
			k = tea.KeyMsg{Type: tea.KeyEnd}
		}
		if k.Type != 0 {
			m.nav.ms.Update(k)
		}
	}
	step := -1 // how far a half page moves (-1: not known yet)
	for guard := 0; guard <= 2*len(m.nav.items)+2; guard++ {
		cur, ok := m.nav.ms.Hovered()
		if !ok || cur == t {
			return
		}
		d := t - cur
		dist := max(d, -d)
		var k tea.KeyMsg
		half := dist > 8 && step != 0 && (step < 0 || dist >= step)
		switch {
		case half && d > 0:
			k = tea.KeyMsg{Type: tea.KeyCtrlD}
		case half:
			k = tea.KeyMsg{Type: tea.KeyCtrlU}
		case d > 0:
			k = tea.KeyMsg{Type: tea.KeyDown}
		default:
			k = tea.KeyMsg{Type: tea.KeyUp}
		}
		m.nav.ms.Update(k)
		if half {
			now, _ := m.nav.ms.Hovered()
			step = max(now-cur, cur-now)
		}
	}
}
