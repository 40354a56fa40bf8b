package reviewcmd

import (
	"errors"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/review/tui"
)

// ErrAborted is returned by Options.Decide when the person aborted the review: nothing is
// applied.
var ErrAborted = errors.New("review aborted: nothing was applied")

// interactive lets a person decide on the terminal of ios, with the interactive review (what
// it shows beside the changes: topts). This is the only place that calls the review's TUI.
func interactive(cs *review.Changeset, ios *iostreams.IOStreams, topts tui.Options) ([]review.Decision, error) {
	decisions, err := tui.Run(cs, ios.In, ios.RawOut(), topts)
	if errors.Is(err, tui.ErrAborted) {
		return nil, ErrAborted
	}
	return decisions, err
}
