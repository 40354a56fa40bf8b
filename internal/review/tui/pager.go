package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// doc is something long to show in the pager: render lays it out for a width and says on
// which line to start.
type doc struct {
	title  string
	render func(width int) (lines []string, start int)
}

// pagerModel is the scrollable view of a doc (its own small bubbletea program).
type pagerModel struct {
	doc     doc
	p       *painter
	vp      viewport.Model
	ready   bool
	aborted bool
	width   int
	height  int
}

func newPager(d doc, p *painter, width, height int) *pagerModel {
	m := &pagerModel{doc: d, p: p}
	m.resize(width, height)
	return m
}

func (m *pagerModel) resize(width, height int) {
	if width <= 0 || height <= 0 {
		return
	}
	top := 0
	if m.ready {
		top = m.vp.YOffset
	}
	m.width, m.height = width, height
	lines, start := m.doc.render(width)
	m.vp = viewport.New(width, max(1, height-2))
	m.vp.SetContent(strings.Join(lines, "\n"))
	if !m.ready {
		top = start
	}
	m.vp.SetYOffset(top)
	m.ready = true
}

func (m *pagerModel) Init() tea.Cmd { return nil }

func (m *pagerModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
		return m, nil
	case tea.KeyMsg:
		switch msg.String() {
		case "ctrl+c", "esc":
			m.aborted = true
			return m, tea.Quit
		case "q", "Q", "enter":
			return m, tea.Quit
		case "g", "home":
			m.vp.GotoTop()
			return m, nil
		case "G", "end":
			m.vp.GotoBottom()
			return m, nil
		case "s", "S":
			m.p.toggleSideBySide(m.width)
			m.resize(m.width, m.height)
			return m, nil
		case "w", "W":
			// Show or hide changes of white space only (the painter is the review's: the
			// choice holds for every diff shown after).
			m.p.hideWS = !m.p.hideWS
			m.resize(m.width, m.height)
			return m, nil
		}
	}
	var cmd tea.Cmd
	m.vp, cmd = m.vp.Update(msg)
	return m, cmd
}

func (m *pagerModel) View() string {
	if !m.ready {
		return ""
	}
	title := ansi.Truncate(" "+m.doc.title+" ", m.width, "…")
	pad := max(0, m.width-ansi.StringWidth(title))
	head := m.p.title.Render(title + strings.Repeat(" ", pad))
	pos := fmt.Sprintf(" %d-%d/%d ", min(m.vp.YOffset+1, m.vp.TotalLineCount()),
		min(m.vp.YOffset+m.vp.Height, m.vp.TotalLineCount()), m.vp.TotalLineCount())
	ws := "w: hide white space"
	if m.p.hideWS {
		ws = "w: show white space"
	}
	help := "↑↓ jk PgUp PgDn g G: scroll · q/enter: back · esc: abort · " + ws
	if m.width >= minSideBySide {
		help += " · s: side by side/unified"
	}
	help = ansi.Truncate(help, max(0, m.width-len(pos)), "…")
	gap := max(0, m.width-ansi.StringWidth(help)-len(pos))
	foot := m.p.dim.Render(help + strings.Repeat(" ", gap) + pos)
	return head + "\n" + m.vp.View() + "\n" + foot
}
