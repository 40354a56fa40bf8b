package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tools/env"
)

// Background is the background processes of one server: the session's, started by this
// server (its owner name, "HOSTPID-RANDOM"). They run in the guest under supervisors of their
// own, so they outlive the runner and the connection that started them (serve's handoff, a
// reconnect); they end with the server (End), on `limactl mcp discard` (the whole session's),
// or when the VM stops. A server that died without ending them (SIGKILL, a host crash) leaves
// them running until the next server of the session on this host starts a background process
// (it ends the ones whose server's host process is gone) or discard.
type Background struct {
	g       *env.Guest
	session string
	owner   string
	lim     BackgroundLimits

	mu      sync.Mutex
	started bool          // a process was started: End has something to do
	next    map[int]int64 // id → where the agent's last read ended
	reaped  sync.Once     // orphans of dead servers were looked for

	pv *previews // nil: the ports are reported, not forwarded (background_ports.go)
}

// BackgroundLimits bound the background processes of one server.
type BackgroundLimits struct {
	MaxRunning   int // at once
	MaxKept      int // records kept, running or ended
	SegmentBytes int // output is kept in segments of this size:
	HeadSegments int // the first ones
	TailSegments int // and the last ones
	ReadDefault  int // bytes read_background_output returns by default
	ReadMax      int // and at most
	// PortWait is how long a start waits for the process to listen on a port (its answer
	// then carries the port and its host URL); the other tools report ports found later.
	PortWait time.Duration
}

// DefaultBackgroundLimits keep at most 16 processes running and 32 records, each with the
// first 256 KiB and the last 1 MiB of its output (1.25 MiB on the guest's disk at most).
var DefaultBackgroundLimits = BackgroundLimits{
	MaxRunning:   16,
	MaxKept:      32,
	SegmentBytes: 64 << 10,
	HeadSegments: 4,
	TailSegments: 16,
	ReadDefault:  32 << 10,
	ReadMax:      256 << 10,
	PortWait:     2 * time.Second,
}

// NewBackground returns the background processes of a server of session (staging.SessionID).
func NewBackground(conn *guest.Conn, session string, lim BackgroundLimits) (*Background, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return &Background{g: env.NewGuest(conn), session: session, owner: strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b), lim: lim, next: map[int]int64{}}, nil
}

func (b *Background) group() string { return b.session + "/" + b.owner }

func (b *Background) output() runnerproto.BgOutput {
	return runnerproto.BgOutput{SegmentBytes: b.lim.SegmentBytes, HeadSegments: b.lim.HeadSegments, TailSegments: b.lim.TailSegments}
}

// End kills this server's background processes and removes their records, within timeout: a
// server's shutdown never waits longer. It does nothing when none was ever started.
func (b *Background) End(timeout time.Duration) error {
	b.endPreviews()
	b.mu.Lock()
	started := b.started
	b.mu.Unlock()
	if !started {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := b.g.EndBackground(ctx, runnerproto.BgEndRequest{Group: b.group()})
	return err
}

// reapOrphans ends the background processes that servers of this session left behind when
// they died without ending them: those whose owner's host process is gone.
func (b *Background) reapOrphans(ctx context.Context) {
	b.reaped.Do(func() {
		res, err := b.g.EndBackground(ctx, runnerproto.BgEndRequest{Group: b.session, ListOnly: true})
		if err != nil {
			return
		}
		var keep []string
		dead := false
		for _, o := range res.Owners {
			pid, _, _ := strings.Cut(o, "-")
			if n, err := strconv.Atoi(pid); err == nil && o != b.owner && !hostProcessAlive(n) {
				dead = true
			} else {
				keep = append(keep, o)
			}
		}
		if dead {
			_, _ = b.g.EndBackground(ctx, runnerproto.BgEndRequest{Group: b.session, KeepOwners: keep})
		}
	})
}

// bgError says what a failed background call means for the agent.
func bgError(err error) error {
	switch {
	case errors.Is(err, guest.ErrNoRunner):
		return errors.New("background processes need the guest runner, which this server does not use (serve --no-runner, or it could not start: see the server's log); run the command in the foreground, with its output sent to a file")
	case guest.IsConnectionError(err):
		return fmt.Errorf("the connection to the guest was lost (%v); retry: the next call reconnects, and background processes keep running in the guest meanwhile", err)
	}
	return err
}

// errNoBackground is the answer of a server without background processes.
// background is what the background tools start with: the environment (a server that cannot
// reach its instance says so first) and the server's background processes.
func (ts *Toolset) background(ctx context.Context, req *mcp.CallToolRequest) (*env.Env, *Background, error) {
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if ts.bg == nil {
		return nil, nil, errNoBackground
	}
	return e, ts.bg, nil
}

var errNoBackground = errors.New("this server does not run background processes (it has no session); run the command in the foreground")

func unknownBackground(id int) error {
	return fmt.Errorf("no background process with id %d in this server: list_background_processes shows the ones there are (they end with the server that started them)", id)
}
