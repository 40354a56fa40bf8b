package tui

import (
	"errors"
	"fmt"
	"io"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"
)

// Running huh forms and the pager as bubbletea programs, with the keys every screen shares.

// formModel runs a huh form inside our own program so that Esc aborts (unless it is closing
// a filter) and "v" can open the pager.
type formModel struct {
	form     *huh.Form
	canView  bool
	wantView bool
	aborted  bool
	nav      *listNav // the file list's own keys (listnav.go), nil elsewhere
	// keys are keys of this screen that leave the form for a moment (a step of their own,
	// lines.go); wantKey is the one pressed.
	keys    map[string]formKey
	wantKey string
}

func (m *formModel) Init() tea.Cmd {
	if m.nav != nil {
		// The list draws its viewed marks as they are now (a file just viewed).
		cmds := []tea.Cmd{m.form.Init(), func() tea.Msg { return relabelMsg{} }}
		if t := m.nav.tree; t != nil && t.on && !t.shown {
			// A tree starts at its top (huh puts the cursor on the first selected row,
			// below the directory's own).
			t.shown = true
			cmds = append(cmds, func() tea.Msg { return tea.KeyMsg{Type: tea.KeyHome} })
		}
		return tea.Batch(cmds...)
	}
	return m.form.Init()
}

// filtering says whether the focused field is typing a filter (then keys are text).
func (m *formModel) filtering() bool {
	f, ok := m.form.GetFocusedField().(interface{ GetFiltering() bool })
	return ok && f.GetFiltering()
}

func (m *formModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok {
		if m.nav != nil && !m.filtering() && m.navKey(k.String()) {
			return m, nil
		}
		switch k.String() {
		case "ctrl+c":
			m.aborted = true
			return m, tea.Quit
		case "esc":
			if !m.filtering() {
				m.aborted = true
				return m, tea.Quit
			}
		default:
			if fk, ok := m.keys[k.String()]; ok && !m.filtering() && (fk.ok == nil || fk.ok()) {
				m.wantKey = k.String()
				return m, tea.Quit
			}
		case "v", "V":
			if m.canView && !m.filtering() {
				m.wantView = true
				return m, tea.Quit
			}
		}
	}
	f, cmd := m.form.Update(msg)
	if ff, ok := f.(*huh.Form); ok {
		m.form = ff
	}
	if _, key := msg.(tea.KeyMsg); key && m.nav != nil && m.nav.syncDirs() {
		m.redraw()
	}
	switch m.form.State {
	case huh.StateAborted:
		m.aborted = true
		return m, tea.Quit
	case huh.StateCompleted:
		return m, tea.Quit
	}
	return m, cmd
}

func (m *formModel) View() string {
	if m.form.State != huh.StateNormal {
		return ""
	}
	return m.form.View()
}

// teaOptions are the options of every full-screen program.
func (r *reviewer) teaOptions() []tea.ProgramOption {
	return []tea.ProgramOption{
		tea.WithInput(r.in),
		tea.WithOutput(r.out),
		tea.WithAltScreen(),
	}
}

// runProgram runs a bubbletea program and maps its ways of ending to ErrAborted.
func (r *reviewer) runProgram(m tea.Model) error {
	_, err := tea.NewProgram(m, r.teaOptions()...).Run()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tea.ErrInterrupted), errors.Is(err, tea.ErrProgramKilled):
		return ErrAborted
	default:
		return fmt.Errorf("review: terminal UI: %w", err)
	}
}

// runForm shows a form until it is completed. view, when not nil, is what "v" shows (or
// nil when there is nothing to show for the current state of the form).
func (r *reviewer) runForm(f *huh.Form, view func() *doc) error {
	return r.runFormNav(f, view, nil)
}

// runFormNav is runForm with the file list's own keys (nav, nil for none).
func (r *reviewer) runFormNav(f *huh.Form, view func() *doc, nav *listNav) error {
	return r.runFormKeys(f, view, nav, nil)
}

// formKey is a key of a form that runs a step of its own (run) when ok says it applies (nil:
// always); otherwise the key goes to the form.
type formKey struct {
	ok  func() bool
	run func() error
}

// runFormKeys is runFormNav with keys that run a step of their own and come back to the
// form as it was (the full-screen UI only).
func (r *reviewer) runFormKeys(f *huh.Form, view func() *doc, nav *listNav, keys map[string]formKey) error {
	f = f.WithKeyMap(r.keymap).WithTheme(r.theme).WithShowHelp(true)
	if r.opts.Width > 0 {
		f = f.WithWidth(r.opts.Width)
	}
	if r.opts.Height > 0 {
		f = f.WithHeight(r.opts.Height)
	}
	if r.accessible {
		if r.acc.aborted() {
			return ErrAborted
		}
		// Note: huh's accessible mode ignores errors and never reports an abort; our
		// input reader notices Esc, Ctrl-C (SIGINT) and the end of the input instead.
		err := f.WithAccessible(true).WithInput(r.acc).WithOutput(r.out).Run()
		if r.acc.aborted() {
			return ErrAborted
		}
		if err != nil {
			if errors.Is(err, huh.ErrUserAborted) {
				return ErrAborted
			}
			return fmt.Errorf("review: %w", err)
		}
		return nil
	}
	f = f.WithInput(r.in).WithOutput(r.out)
	for {
		m := &formModel{form: f, canView: view != nil, nav: nav, keys: keys}
		if err := r.runProgram(m); err != nil {
			return err
		}
		switch {
		case m.aborted, f.State == huh.StateAborted:
			return ErrAborted
		case f.State == huh.StateCompleted:
			return nil
		case m.wantKey != "":
			if err := keys[m.wantKey].run(); err != nil {
				return err
			}
		case m.wantView:
			if d := view(); d != nil {
				if err := r.page(*d); err != nil {
					return err
				}
			}
		default:
			return ErrAborted
		}
	}
}

// page shows a doc: scrollable full screen, or printed in accessible mode.
func (r *reviewer) page(d doc) error {
	if r.accessible {
		lines, _ := d.render(r.width())
		_, _ = fmt.Fprintf(r.out, "\n--- %s ---\n", d.title)
		for _, l := range lines {
			_, _ = io.WriteString(r.out, l+"\n")
		}
		_, _ = fmt.Fprintf(r.out, "--- end of %s ---\n\n", d.title)
		if r.acc.aborted() {
			return ErrAborted
		}
		return nil
	}
	w, h := r.size()
	m := newPager(d, r.paint, w, h)
	if err := r.runProgram(m); err != nil {
		return err
	}
	if m.aborted {
		return ErrAborted
	}
	return nil
}
