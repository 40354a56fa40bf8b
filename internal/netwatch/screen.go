package netwatch

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Screen is the watch's screen (bubbletea): the connections the guest's proxy holds while the
// person decides, then the blocked destinations, newest first, read again every
// Source.Interval; o allows the held connection at the cursor once, a allows the destination
// at the cursor for the session (a held one goes through), s also saves it as the project's
// policy, d refuses a held connection now or hides a blocked destination; q or esc leave
// (Leave names what that does), ctrl+c too, and Interrupted says so.
type Screen struct {
	w      *Watch
	ctx    context.Context
	leave  string
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
	// Interrupted: the person left with ctrl+c.
	Interrupted bool
}

// NewScreen is the screen of w; its reads and decisions end with ctx; leave is what q does
// ("quit", "back").
func NewScreen(ctx context.Context, w *Watch, leave string) *Screen {
	return &Screen{w: w, ctx: ctx, leave: leave, policy: w.Policy()}
}

type readMsg struct{ err error }
type tickMsg struct{}
type decidedMsg struct {
	status string
	err    error
}

func (m *Screen) Init() tea.Cmd { return m.readCmd() }

func (m *Screen) readCmd() tea.Cmd {
	return func() tea.Msg {
		_, err := m.w.Read(m.ctx)
		return readMsg{err: err}
	}
}

func (m *Screen) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case readMsg:
		m.reads++
		m.readErr = ""
		if msg.err != nil {
			m.readErr = msg.err.Error()
		}
		m.refresh()
		return m, tea.Tick(m.w.src.Interval, func(time.Time) tea.Msg { return tickMsg{} })
	case tickMsg:
		return m, m.readCmd()
	case decidedMsg:
		m.busy = false
		m.status = msg.status
		if msg.err != nil {
			m.status = "refused: " + msg.err.Error()
		}
		m.policy = m.w.Policy()
		m.refresh()
		return m, nil
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *Screen) refresh() {
	m.list = m.w.List()
	if m.cursor >= len(m.list) {
		m.cursor = max(0, len(m.list)-1)
	}
}

func (m *Screen) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "ctrl+c":
		m.Interrupted = true
		return m, tea.Quit
	case "q", "esc":
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
			status, err := m.w.Allow(m.ctx, d, save)
			return decidedMsg{status: status, err: err}
		}
	case "o":
		if m.busy || len(m.list) == 0 {
			return m, nil
		}
		d := m.list[m.cursor]
		if !d.Held {
			m.status = "o allows a held connection or request once; " + termsafe.String(d.Entry()) + " was refused already (a allows it for the session)"
			return m, nil
		}
		return m, m.decide(d, netpolicy.DecisionOnce, "allowing "+termsafe.String(d.Entry())+" once ...")
	case "d":
		if m.busy || len(m.list) == 0 {
			return m, nil
		}
		d := m.list[m.cursor]
		if d.Held {
			return m, m.decide(d, netpolicy.DecisionDeny, "refusing "+termsafe.String(d.Entry())+" ...")
		}
		m.w.Deny(d)
		m.status = "denied " + termsafe.String(d.Entry()) + ": it stays blocked, and hidden here"
		m.refresh()
	}
	return m, nil
}

// decide applies a decision on the held connection d.
func (m *Screen) decide(d Destination, decision, doing string) tea.Cmd {
	m.busy = true
	m.status = doing
	return func() tea.Msg {
		status, err := m.w.Decide(m.ctx, d, decision)
		return decidedMsg{status: status, err: err}
	}
}

func (m *Screen) View() string {
	var b strings.Builder
	b.WriteString(m.wrap("Blocked attempts of "+termsafe.String(m.w.src.Title)) + "\n")
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
		if d.Held {
			fmt.Fprintf(&b, "%sHELD %-35s %3d s left, waiting since %s: o once, a for the session, d refuse%s\n", mark, termsafe.String(d.Entry()),
				d.SecondsLeft, d.First.Local().Format("15:04:05"), byCommand(d))
			continue
		}
		fmt.Fprintf(&b, "%s%-40s %s  first %s  last %s  via %s%s\n", mark, termsafe.String(d.Entry()),
			words.Count(d.Attempts, "attempt"), d.First.Local().Format("15:04:05"), d.Last.Local().Format("15:04:05"), termsafe.String(d.Via), byCommand(d))
	}
	b.WriteString("\n")
	if m.readErr != "" {
		b.WriteString(m.wrap("reading the record failed (trying again): "+termsafe.String(m.readErr)) + "\n")
	}
	if m.status != "" {
		b.WriteString(m.wrap(termsafe.String(m.status)) + "\n")
	}
	b.WriteString(m.wrap("o allow once (a held connection or request)   a allow for the session   s allow and save as the project's policy   d deny   up/down choose   q "+m.leave) + "\n")
	return b.String()
}

// wrap breaks a line of safe text (termsafe's) to the terminal's width.
func (m *Screen) wrap(s string) string {
	if m.width <= 0 {
		return s
	}
	return ansi.Wrap(s, m.width, " ,")
}

// maxShownCommand is how much of a command line a row of the screen shows.
const maxShownCommand = 60

// byCommand is "  by CMD" for a destination whose last attempt's command is known: the
// agent's text, escaped and cut to maxShownCommand characters.
func byCommand(d Destination) string {
	if d.Command == "" {
		return ""
	}
	cmd := termsafe.String(d.Command)
	if r := []rune(cmd); len(r) > maxShownCommand {
		cmd = string(r[:maxShownCommand-3]) + "..."
	}
	return "  by " + cmd
}
