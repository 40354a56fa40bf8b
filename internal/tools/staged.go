package tools

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// Staged is the WorkspaceSource (and PendingSource) of a staged session. Staging runs in the
// background from the start; a call waits for it, with MCP progress notifications when the
// request carries a progress token. If staging fails (the instance is stopped, say), the call
// says why and the next call tries again.
type Staged struct {
	// Shown is the working directory as the agent knows it, when that is a path through a
	// symbolic link to the staged one (see workspace.Workspace.ShownAs); "" when it is not.
	Shown string

	ctx  context.Context // the server's lifetime: a cancelled request does not stop staging
	open func(ctx context.Context, progress func(staging.Progress)) (*staging.Session, error)

	mu      sync.Mutex
	sess    *staging.Session
	running chan struct{}
	err     error
	prog    staging.Progress
}

// NewStaged returns a source that stages with open.
func NewStaged(ctx context.Context, open func(ctx context.Context, progress func(staging.Progress)) (*staging.Session, error)) *Staged {
	return &Staged{ctx: ctx, open: open}
}

// Start begins staging in the background if it is not done or under way.
func (s *Staged) Start() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		return s.running
	}
	done := make(chan struct{})
	if s.sess != nil {
		close(done)
		return done
	}
	s.running = done
	go func() {
		sess, err := s.open(s.ctx, func(p staging.Progress) {
			s.mu.Lock()
			s.prog = p
			s.mu.Unlock()
		})
		s.mu.Lock()
		s.sess, s.err, s.running = sess, err, nil
		s.mu.Unlock()
		close(done)
	}()
	return done
}

// Session waits for the staged session.
func (s *Staged) Session(ctx context.Context, req *mcp.CallToolRequest) (*staging.Session, error) {
	done := s.Start()
	ctx = withProgress(ctx)
	notify := func() {
		s.mu.Lock()
		p := s.prog
		s.mu.Unlock()
		progressOf(ctx).send(ctx, req, float64(p.Bytes), float64(p.TotalBytes), fmt.Sprintf("staging the working directory: %d/%d files", p.Files, p.TotalFiles))
	}
	select {
	case <-done:
	default:
		notify() // at once: the call is waiting for staging
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.sess == nil {
				return nil, fmt.Errorf("the working directory could not be staged into the instance: %w (the next call tries again)", s.err)
			}
			return s.sess, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
			notify()
		}
	}
}

// Workspace implements WorkspaceSource.
func (s *Staged) Workspace(ctx context.Context, req *mcp.CallToolRequest) (*workspace.Workspace, error) {
	sess, err := s.Session(ctx, req)
	if err != nil {
		return nil, err
	}
	ws := sess.Workspace()
	if s.Shown != "" {
		ws = ws.ShownAs(s.Shown)
	}
	return ws, nil
}

// GuestChanges implements PendingSource.
func (s *Staged) GuestChanges(ctx context.Context) (*staging.ChangeSet, error) {
	sess, err := s.Session(ctx, nil)
	if err != nil {
		return nil, err
	}
	return sess.GuestChanges(ctx)
}

// PendingDiff implements PendingSource.
func (s *Staged) PendingDiff(ctx context.Context, rel string) (string, error) {
	sess, err := s.Session(ctx, nil)
	if err != nil {
		return "", err
	}
	return sess.PendingDiff(ctx, rel)
}
