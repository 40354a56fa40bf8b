package guest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

// Stream runs a shell command in its own SSH session with stdin fed from in (which may be
// nil) and returns its stdout; it is how archives travel in one stream, and how the staging
// code runs its few setup commands. The command is interpreted by the user's shell.
func (c *Conn) Stream(ctx context.Context, script string, in io.Reader) ([]byte, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	s, err := l.client.NewSession()
	if err != nil {
		c.drop(l, err)
		return nil, fmt.Errorf("%w: %v", errNoSession, err)
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	if in != nil {
		s.Stdin = in
	}
	if err := s.Start(script); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "..."
		}
		return stdout.Bytes(), fmt.Errorf("%w: %s", err, msg)
	}
	return stdout.Bytes(), nil
}
