package netwatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// Source is what a watch needs of a session, given by its caller (the watch command, the
// review command for its TUI), so that this package holds no connection.
type Source struct {
	// Read reads the agent's network record once (bounded by ctx), checked as guest output.
	Read func(ctx context.Context) (*netpolicy.Record, error)
	// Allow allows the destination for the session (save: and as the project's policy), the
	// change `network INSTANCE allow` makes; it returns what to say.
	Allow func(ctx context.Context, entry string, save bool) (string, error)
	// Policy is the session's policy as recorded now.
	Policy func() string
	// Title names what is watched (shown through termsafe).
	Title string
	// Interval is how often the screen reads the record.
	Interval time.Duration
}

const (
	// ReadTimeout bounds one read of the record.
	ReadTimeout = 30 * time.Second
	// DefaultInterval is how often a watch reads the record.
	DefaultInterval = time.Second
)

// Watch is one watch of one session: its counted destinations and the person's decisions.
// The reads and the decisions may run in goroutines of their own.
type Watch struct {
	src Source
	mu  sync.Mutex
	b   *blocked
}

// New starts a watch of src with nothing counted yet.
func New(src Source) *Watch {
	return &Watch{src: src, b: newBlocked()}
}

// Read reads the record once (bounded by ReadTimeout) and counts what is new: the
// destinations it changed, newest first.
func (w *Watch) Read(ctx context.Context) ([]Destination, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	rec, err := w.src.Read(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.add(rec.Entries), nil
}

// List is the destinations to decide on, newest first.
func (w *Watch) List() []Destination {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.list()
}

// Deny hides d from the list for the rest of the watch: it is refused already.
func (w *Watch) Deny(d Destination) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.denied[d.Entry()] = true
}

// Allow applies the person's decision on d through Source.Allow; d leaves the list until it
// is refused again. It returns what to say.
func (w *Watch) Allow(ctx context.Context, d Destination, save bool) (string, error) {
	msg, err := w.src.Allow(ctx, d.Entry(), save)
	if err != nil {
		return "", fmt.Errorf("allow %s: %w", termsafe.String(d.Entry()), err)
	}
	w.mu.Lock()
	w.b.allowed[d.Entry()] = true
	w.mu.Unlock()
	return msg, nil
}

// Policy is the session's policy as recorded now.
func (w *Watch) Policy() string { return w.src.Policy() }
