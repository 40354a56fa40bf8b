package discardcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// endBackground kills the background processes of every server of the session and removes
// their records, and says what it stopped for the closing line (", and stopped 2 background
// processes", or ""). A failure is reported and does not stop the discard: they are the
// agent's own processes, in the guest.
func endBackground(ctx context.Context, conn *guest.Conn, session string, errOut io.Writer) string {
	var r *runnerproto.BgEndResult
	err := conn.Within(ctx, bgEndWait, "ending the agent's background processes", func(ctx context.Context) error {
		var err error
		r, err = conn.BgEnd(ctx, runnerproto.BgEndRequest{Group: session})
		return err
	})
	switch {
	case errors.Is(err, guest.ErrNoRunner):
		return ""
	case err != nil:
		fmt.Fprintf(errOut, "warning: the agent's background processes may still run in the guest: %v\n", err)
		return ""
	case r.Killed == 0:
		return ""
	}
	return ", and stopped " + words.Count(r.Killed, "background process", "background processes")
}
