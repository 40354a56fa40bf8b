package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
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
	// Search ("/"): the lines as text, the query being typed (typing) or last searched, and
	// what the last search said when it found nothing.
	text      []string
	typing    bool
	query     string
	searchMsg string
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
	m.text = make([]string, len(lines))
	for i, l := range lines {
		m.text[i] = strings.ToLower(ansi.Strip(l))
	}
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
		if m.typing {
			return m.typeQuery(msg)
		}
		switch msg.String() {
		case "/":
			m.typing, m.query, m.searchMsg = true, "", ""
			return m, nil
		case "n":
			m.search(m.vp.YOffset + 1)
			return m, nil
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

// typeQuery is a key while the search is being typed: enter searches, esc cancels (it does not
// abort the review), ctrl+c aborts.
func (m *pagerModel) typeQuery(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch k.Type {
	case tea.KeyCtrlC:
		m.aborted = true
		return m, tea.Quit
	case tea.KeyEsc:
		m.typing, m.query = false, ""
	case tea.KeyEnter:
		m.typing = false
		m.search(m.vp.YOffset)
	case tea.KeyBackspace:
		if r := []rune(m.query); len(r) > 0 {
			m.query = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		m.query += string(k.Runes)
	}
	return m, nil
}

// search scrolls to the first line at or after from (wrapping) that holds the query, in any
// case, as the screen shows it.
func (m *pagerModel) search(from int) {
	m.searchMsg = ""
	q := strings.ToLower(m.query)
	if q == "" || len(m.text) == 0 {
		return
	}
	for k := range len(m.text) {
		i := (from + k) % len(m.text)
		if strings.Contains(m.text[i], q) {
			m.vp.SetYOffset(i)
			return
		}
	}
	m.searchMsg = "not found: " + m.query
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
	help := "↑↓ jk PgUp PgDn g G: scroll · q/enter: back · esc: abort · "
	if m.width >= minSideBySide {
		help += "s: side by side/unified · "
	}
	help += ws + " · /: search, n: next"
	switch {
	case m.typing:
		help = "/" + termsafe.String(m.query) + "▏ (enter: search · esc: cancel)"
	case m.searchMsg != "":
		help = termsafe.String(m.searchMsg)
	}
	help = ansi.Truncate(help, max(0, m.width-len(pos)), "…")
	gap := max(0, m.width-ansi.StringWidth(help)-len(pos))
	foot := m.p.dim.Render(help + strings.Repeat(" ", gap) + pos)
	return head + "\n" + m.vp.View() + "\n" + foot
}
