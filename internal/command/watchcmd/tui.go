package watchcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// tui shows the blocked destinations, updated at every read, until the person quits.
func (w *watcher) tui(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := &model{w: w, ctx: ctx, policy: policyOf(w)}
	_, err := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(w.opts.IO.In), tea.WithOutput(w.opts.IO.RawOut()), tea.WithAltScreen()).Run()
	switch {
	case err == nil, errors.Is(err, tea.ErrInterrupted), errors.Is(err, tea.ErrProgramKilled):
		return nil
	default:
		return fmt.Errorf("watch: terminal UI: %w", err)
	}
}

// policyOf is the session's policy as recorded now (after the decisions of this watch, or a
// `network` command run meanwhile).
func policyOf(w *watcher) string {
	if st, err := w.t.Lookup(w.st.Workdir, w.st.Session); err == nil && st != nil {
		return staging.NetworkOf(st)
	}
	return staging.NetworkOf(w.st)
}

// model is the watch's screen.
type model struct {
	w      *watcher
	ctx    context.Context
	list   []Destination
	cursor int
	policy string
	// status is the outcome of the last decision; readErr why the last read failed.
	status, readErr string
	// busy: a decision is being applied (keys that decide wait for it).
	busy  bool
	reads int
	// width is the terminal's (0 until told): long lines wrap, not cut.
	width int
	fatal error
}

type readMsg struct{ err error }
type tickMsg struct{}
type decidedMsg struct {
	status string
	err    error
}

func (m *model) Init() tea.Cmd { return m.readCmd() }

func (m *model) readCmd() tea.Cmd {
	return func() tea.Msg {
		_, err := m.w.read(m.ctx)
		return readMsg{err: err}
	}
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case readMsg:
		m.reads++
		m.readErr = ""
		if msg.err != nil {
			m.readErr = msg.err.Error()
		}
		m.refresh()
		return m, tea.Tick(m.w.opts.Interval, func(time.Time) tea.Msg { return tickMsg{} })
	case tickMsg:
		return m, m.readCmd()
	case decidedMsg:
		m.busy = false
		m.status = msg.status
		if msg.err != nil {
			m.status = "refused: " + msg.err.Error()
		}
		m.policy = policyOf(m.w)
		m.refresh()
		return m, nil
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *model) refresh() {
	m.list = m.w.list()
	if m.cursor >= len(m.list) {
		m.cursor = max(0, len(m.list)-1)
	}
}

func (m *model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "q", "ctrl+c", "esc":
		return m, tea.Quit
	case "up", "k":
		m.cursor = max(0, m.cursor-1)
	case "down", "j":
		m.cursor = min(max(0, len(m.list)-1), m.cursor+1)
	case "a", "s":
		if m.busy || len(m.list) == 0 {
			return m, nil
		}
		d, save := m.list[m.cursor], k.String() == "s"
		m.busy = true
		m.status = "allowing " + termsafe.String(d.Entry()) + " ..."
		return m, func() tea.Msg {
			status, err := m.w.allow(m.ctx, d, save)
			return decidedMsg{status: status, err: err}
		}
	case "d":
		if m.busy || len(m.list) == 0 {
			return m, nil
		}
		d := m.list[m.cursor]
		m.w.deny(d)
		m.status = "denied " + termsafe.String(d.Entry()) + ": it stays blocked, and hidden here"
		m.refresh()
	}
	return m, nil
}

func (m *model) View() string {
	var b strings.Builder
	which := m.w.st.Workdir
	if m.w.st.Session != "" {
		which += " [session " + m.w.st.Session + "]"
	}
	fmt.Fprintf(&b, "Blocked attempts of %s (instance %s)\n", termsafe.String(which), termsafe.String(m.w.t.Instance.Name))
	b.WriteString(m.wrap("policy: "+termsafe.String(m.policy)) + "\n\n")
	switch {
	case m.reads == 0:
		b.WriteString("  reading the agent's network record ...\n")
	case len(m.list) == 0:
		b.WriteString("  no blocked attempt (yet): they show here as the agent makes them\n")
	}
	for i, d := range m.list {
		mark := "  "
		if i == m.cursor {
			mark = "> "
		}
		fmt.Fprintf(&b, "%s%-40s %s  first %s  last %s  via %s\n", mark, termsafe.String(d.Entry()),
			words.Count(d.Attempts, "attempt"), d.First.Local().Format("15:04:05"), d.Last.Local().Format("15:04:05"), termsafe.String(d.Via))
	}
	b.WriteString("\n")
	if m.readErr != "" {
		b.WriteString(m.wrap("reading the record failed (trying again): "+termsafe.String(m.readErr)) + "\n")
	}
	if m.status != "" {
		b.WriteString(m.wrap(termsafe.String(m.status)) + "\n")
	}
	b.WriteString(m.wrap("a allow for the session   s allow and save as the project's policy   d deny   up/down choose   q quit") + "\n")
	return b.String()
}

// wrap breaks a line of safe text (termsafe's) to the terminal's width.
func (m *model) wrap(s string) string {
	if m.width <= 0 {
		return s
	}
	return ansi.Wrap(s, m.width, " ,")
}
