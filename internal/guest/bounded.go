package guest

import (
	"context"
	"fmt"
	"time"
)

// WaitError says that the guest did not answer one step within the bound the host set for it
// (Within), or stopped answering altogether while the step ran. The runner's own deadlines
// (guest/runnerclient) are sized for the largest trees and so are minutes long; a step that holds
// something for the person (a session's lock during a review apply or a sync, a discard) is
// bounded tighter by its caller.
type WaitError struct {
	// What is the step, for people ("the automatic checkpoint").
	What string
	// Wait is the bound, or how long the step ran when the runner stopped answering.
	Wait time.Duration
	// Silent: the runner did not answer a liveness check (a cheap call) either.
	Silent bool
}

func (e *WaitError) Error() string {
	if e.Silent {
		return fmt.Sprintf("%s: the guest runner stopped answering (no answer to a check within %s, %s into the step; the connection to it is started again at the next call)", e.What, pingWait, e.Wait.Round(time.Second))
	}
	return fmt.Sprintf("%s: the guest did not answer within %s (the connection to it is started again at the next call)", e.What, e.Wait)
}

// Unwrap makes a WaitError a context.DeadlineExceeded.
func (e *WaitError) Unwrap() error { return context.DeadlineExceeded }

// While a bounded step runs, the runner is asked every pingEvery for a one-entry listing of
// "/" (it serves calls concurrently), and a runner that does not answer that within pingWait
// is taken for silent: a busy runner answers at once (a few milliseconds; a second on a loaded
// emulated guest), one that answers nothing is found out in well under a minute instead of
// at the step's bound, which must leave room for a first checkpoint of a large tree.
var (
	pingEvery = 15 * time.Second
	pingWait  = 30 * time.Second
)

// Within runs f with ctx bounded by d, checking meanwhile that the runner still answers. When
// the bound passes first (not ctx), or the runner stops answering, the connection f used is
// dropped (a runner that said nothing is not asked again: the next call starts, and verifies, a
// new one) and the error is a *WaitError naming what.
func (c *Conn) Within(ctx context.Context, d time.Duration, what string, f func(ctx context.Context) error) error {
	bctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	silent := make(chan struct{})
	go c.watchRunner(bctx, silent, cancel)
	err := f(bctx)
	if err == nil || ctx.Err() != nil || bctx.Err() == nil {
		return err
	}
	werr := &WaitError{What: what, Wait: d}
	select {
	case <-silent:
		werr.Silent, werr.Wait = true, time.Since(start)
	default:
	}
	c.mu.Lock()
	l := c.cur
	c.mu.Unlock()
	if l != nil {
		c.drop(l, werr)
	}
	return werr
}

// watchRunner asks the current link's runner for a trivial answer every pingEvery until ctx
// ends; when one does not come within pingWait, it closes silent and calls stop.
func (c *Conn) watchRunner(ctx context.Context, silent chan struct{}, stop func()) {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		l := c.cur
		c.mu.Unlock()
		if l == nil {
			continue // connecting: the step's own bound applies
		}
		r, err := l.ops.runner()
		if err != nil {
			continue // no runner: the step's own bound applies
		}
		pctx, cancel := context.WithTimeout(ctx, pingWait)
		err = r.Ping(pctx)
		timedOut := pctx.Err() != nil && ctx.Err() == nil
		cancel()
		if timedOut && err != nil {
			close(silent)
			stop()
			return
		}
	}
}
