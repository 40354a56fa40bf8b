package watchcmd

import (
	"context"
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/limactl-mcp/limactl-mcp/internal/netwatch"
)

// tui shows the blocked destinations (netwatch's screen), updated at every read, until the
// person quits.
func (w *watcher) tui(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := netwatch.NewScreen(ctx, w.nw, "quit")
	_, err := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(w.opts.IO.In), tea.WithOutput(w.opts.IO.RawOut()), tea.WithAltScreen()).Run()
	switch {
	case err == nil, errors.Is(err, tea.ErrInterrupted), errors.Is(err, tea.ErrProgramKilled):
		return nil
	default:
		return fmt.Errorf("watch: terminal UI: %w", err)
	}
}
