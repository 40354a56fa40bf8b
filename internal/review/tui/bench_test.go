package tui

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// The 500-file review, measured in the TUI's own work (no terminal): the file list's first
// screen, a keypress in it, marking a file viewed, and the diff view of a large file with
// word marks, syntax colour and side by side. The numbers are in docs/benchmarks.md; nothing
// here is asserted (a loaded machine is slower, not wrong).

func bench500() (*review.Changeset, *reviewer) { return benchN(500) }

// benchN is the same change with n files (25 per directory).
func benchN(n int) (*review.Changeset, *reviewer) {
	cs := &review.Changeset{Workdir: "/home/me/project"}
	for i := range n {
		cs.Items = append(cs.Items, textItem(fmt.Sprintf("pkg%02d/file%03d.go", i/25, i), staging.Modified,
			"package p\n\nfunc f() int {\n\treturn 1\n}\n", fmt.Sprintf("package p\n\nfunc f() int {\n\treturn %d\n}\n", i)))
	}
	ren := lipgloss.NewRenderer(&bytes.Buffer{})
	ren.SetColorProfile(termenv.ANSI256)
	r := &reviewer{cs: cs, opts: Options{Width: 120, Height: 40}, keymap: huh.NewDefaultKeyMap(), theme: theme(), paint: newPainter(ren, false)}
	return cs, r
}

// inColour makes lipgloss's default renderer, through which huh's theme draws, that of a
// dark 256-colour terminal (tmux's default) for the benchmark: in a test it has no terminal
// and would draw no colour at all, leaving the colours' cost out of the figures. Each
// benchmark calls it before it builds the review (the theme is resolved for the terminal).
func inColour(b *testing.B) {
	prof, dark := lipgloss.ColorProfile(), lipgloss.HasDarkBackground()
	lipgloss.SetColorProfile(termenv.ANSI256)
	lipgloss.SetHasDarkBackground(true)
	b.Cleanup(func() {
		lipgloss.SetColorProfile(prof)
		lipgloss.SetHasDarkBackground(dark)
	})
}

// listForm is the file list as fileList builds it, ready to draw.
func listForm(r *reviewer, items []*review.Item) (*formModel, *listNav) {
	var chosen []int
	for i := range items {
		chosen = append(chosen, i)
	}
	nav := &listNav{items: items, viewed: make([]bool, len(items)), chosen: &chosen,
		label: func(i int, viewed bool) string {
			l := label(items[i])
			if viewed {
				l += " · viewed"
			}
			return truncate(l, 112)
		}, help: "space: toggle · v: view diff · enter: continue · esc: abort"}
	ms := huh.NewMultiSelect[int]().Title("Files to accept").Description(nav.description())
	ms.WithTheme(r.theme)
	nav.ms = ms
	ms.Accessor(nav.accessor()).Height(34).Options(nav.options()...)
	f := huh.NewForm(huh.NewGroup(ms).Title(summaryLine(r.cs.Summary()))).WithKeyMap(r.keymap).WithTheme(r.theme).WithShowHelp(true).WithWidth(120).WithHeight(40)
	m := &formModel{form: f, nav: nav, canView: true}
	m.Init()
	return m, nav
}

func BenchmarkFileListFirstScreen500(b *testing.B)  { benchFirstScreen(b, 500) }
func BenchmarkFileListFirstScreen2000(b *testing.B) { benchFirstScreen(b, 2000) }

func benchFirstScreen(b *testing.B, n int) {
	inColour(b)
	cs, r := benchN(n)
	for b.Loop() {
		m, _ := listForm(r, cs.Items)
		_ = m.View()
	}
}

func BenchmarkFileListKeypress500(b *testing.B) {
	inColour(b)
	cs, r := bench500()
	m, _ := listForm(r, cs.Items)
	_ = m.View()
	keys := []tea.KeyMsg{{Type: tea.KeyDown}, {Type: tea.KeyUp}}
	i := 0
	for b.Loop() {
		m.Update(keys[i%2])
		_ = m.View()
		i++
	}
}

func BenchmarkFileListMarkViewed500(b *testing.B) {
	inColour(b)
	cs, r := bench500()
	m, _ := listForm(r, cs.Items)
	for b.Loop() {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("m")})
		_ = m.View()
	}
}

// A 2,000-line Go file with 40 changes, in the diff view at 200 columns (side by side).
func BenchmarkDiffView2000Lines(b *testing.B) {
	inColour(b)
	var old, new strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&old, "\tx%d := compute(%d, \"s\") // n\n", i, i)
		if i%50 == 25 {
			fmt.Fprintf(&new, "\tx%d := compute(%d, \"t\") // n\n", i, i+1)
		} else {
			fmt.Fprintf(&new, "\tx%d := compute(%d, \"s\") // n\n", i, i)
		}
	}
	it := textItem("big/file.go", staging.Modified, old.String(), new.String())
	_, r := bench500()
	for b.Loop() {
		m := newPager(*r.itemDoc(it, -1), r.paint, 200, 50)
		_ = m.View()
	}
}

// The tree of the 500 files (20 directories): a keypress (↓/↑) with the directory rows'
// counts kept up to date, and folding and unfolding a directory (the options given to huh
// anew, the cursor put back).
func BenchmarkFileTreeKeypress500(b *testing.B) {
	inColour(b)
	cs, r := bench500()
	m, nav := listForm(r, cs.Items)
	nav.tree, nav.width, nav.screenH = newFileTree(cs.Items), 120, 40
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("t")})
	_ = m.View()
	keys := []tea.KeyMsg{{Type: tea.KeyDown}, {Type: tea.KeyUp}}
	i := 0
	for b.Loop() {
		m.Update(keys[i%2])
		_ = m.View()
		i++
	}
}

func BenchmarkFileTreeFold500(b *testing.B) {
	inColour(b)
	cs, r := bench500()
	m, nav := listForm(r, cs.Items)
	nav.tree, nav.width, nav.screenH = newFileTree(cs.Items), 120, 40
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("t")})
	m.Update(tea.KeyMsg{Type: tea.KeyHome})
	keys := []tea.KeyMsg{{Type: tea.KeyLeft}, {Type: tea.KeyRight}}
	i := 0
	for b.Loop() {
		m.Update(keys[i%2])
		_ = m.View()
		i++
	}
}

// A jump to the middle of the list and back (what n, c and the tree's keys do to put the cursor on
// a file far away), at 500 and 2,000 files: the growth says whether it is quadratic.
func BenchmarkFileListJump500(b *testing.B)  { benchJump(b, 500) }
func BenchmarkFileListJump2000(b *testing.B) { benchJump(b, 2000) }

func benchJump(b *testing.B, n int) {
	inColour(b)
	cs, r := benchN(n)
	m, _ := listForm(r, cs.Items)
	_ = m.View()
	targets := []int{n / 2, 1}
	i := 0
	for b.Loop() {
		m.moveTo(targets[i%2])
		_ = m.View()
		i++
	}
	if v, _ := m.nav.ms.Hovered(); v != targets[(i-1)%2] {
		b.Fatalf("the cursor is on %d, not %d", v, targets[(i-1)%2])
	}
}

func BenchmarkFileTreeFold2000(b *testing.B) {
	inColour(b)
	cs, r := benchN(2000)
	m, nav := listForm(r, cs.Items)
	nav.tree, nav.width, nav.screenH = newFileTree(cs.Items), 120, 40
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("t")})
	m.Update(tea.KeyMsg{Type: tea.KeyHome})
	keys := []tea.KeyMsg{{Type: tea.KeyLeft}, {Type: tea.KeyRight}}
	i := 0
	for b.Loop() {
		m.Update(keys[i%2])
		_ = m.View()
		i++
	}
}
