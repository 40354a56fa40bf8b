package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// Placing the cursor (listsel.go) puts it on the row asked for, shows that row, and leaves
// the selection as it was: huh's options are given back their state, and what huh reports
// after (its value on leaving the list) is the selection from before.
func TestPlaceKeepsSelection(t *testing.T) {
	cs, r := bench500()
	m, nav := listForm(r, cs.Items)
	_ = m.View()
	// Leave out every 25th file, with huh's own key, as a person would.
	for i := 0; i < len(cs.Items); i += 25 {
		m.moveTo(i)
		m.Update(keyRunes(" "))
	}
	before := slices.Clone(*nav.chosen)
	slices.Sort(before)
	if len(before) != 500-20 {
		t.Fatalf("%d chosen before", len(before))
	}
	for _, target := range []int{250, 0, 499, 498, 3, 140, 141, 139, 480} {
		m.moveTo(target)
		if v, ok := nav.ms.Hovered(); !ok || v != target {
			t.Fatalf("moveTo(%d): the cursor is on %d (%v)", target, v, ok)
		}
		mark := "✓"
		if target%25 == 0 {
			mark = "•"
		}
		row := fmt.Sprintf("> %s M pkg%02d/file%03d.go", mark, target/25, target)
		scr := m.View()
		if !strings.Contains(scr, row) {
			t.Fatalf("moveTo(%d): %q not on the screen:\n%s", target, row, scr)
		}
		// The list fills its rows (near the end too: no empty screen below the last file).
		if n := strings.Count(scr, " M pkg"); n < 25 {
			t.Fatalf("moveTo(%d): %d files on the screen:\n%s", target, n, scr)
		}
	}
	nav.ms.Blur() // huh reports its value
	after := slices.Clone(*nav.chosen)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatalf("the selection changed: %d chosen before, %d after", len(before), len(after))
	}
}

func keyRunes(s string) tea.KeyMsg {
	if s == " " {
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// A jump to a row the filter hides clears the filter (the list shows every file again and
// its title no longer names the filter), and lands on the row.
func TestPlaceClearsAFilter(t *testing.T) {
	cs, r := benchN(60)
	m, nav := listForm(r, cs.Items)
	_ = m.View()
	m.Update(keyRunes("/"))
	for _, c := range "file04" {
		m.Update(keyRunes(string(c)))
	}
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if scr := m.View(); !strings.Contains(scr, "Files to accept/file04") || strings.Contains(scr, "file050.go") {
		t.Fatalf("not filtered:\n%s", scr)
	}
	m.moveTo(55)
	scr := m.View()
	if v, _ := nav.ms.Hovered(); v != 55 || !strings.Contains(scr, "> ✓ M pkg02/file055.go") || strings.Contains(scr, "Files to accept/file04") {
		t.Fatalf("the cursor is on %d:\n%s", v, scr)
	}
}
