package guest

import (
	"context"
	"fmt"
	"time"
)

// WaitError says that the guest did not answer one step within the bound the host set for it
// (Within). The runner's own deadlines (replies.go) are sized for the largest trees and so are
// minutes long; a step that holds something for the person (a session's lock during a review
// apply or a sync, a discard) is bounded tighter by its caller.
type WaitError struct {
	// What is the step, for people ("the automatic checkpoint").
	What string
	// Wait is the bound.
	Wait time.Duration
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("%s: the guest did not answer within %s (the connection to it is started again at the next call)", e.What, e.Wait)
}

// Unwrap makes a WaitError a context.DeadlineExceeded.
func (e *WaitError) Unwrap() error { return context.DeadlineExceeded }

// Within runs f with ctx bounded by d. When the bound passes first (not ctx), the connection f
// used is dropped (a runner that said nothing is not asked again: the next call starts, and
// verifies, a new one) and the error is a *WaitError naming what.
func (c *Conn) Within(ctx context.Context, d time.Duration, what string, f func(ctx context.Context) error) error {
	bctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := f(bctx)
	if err == nil || ctx.Err() != nil || bctx.Err() == nil {
		return err
	}
	c.mu.Lock()
	l := c.cur
	c.mu.Unlock()
	werr := &WaitError{What: what, Wait: d}
	if l != nil {
		c.drop(l, werr)
	}
	return werr
}
