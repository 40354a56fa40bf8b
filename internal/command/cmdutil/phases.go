package cmdutil

import (
	"fmt"
	"io"
	"os"
	"time"
)

// Phases says, with LIMACTL_MCP_DEBUG=1, how long each step of a command took (on stderr:
// "debug: review: built the changeset in 1.2s"), so that a slow command can be told apart
// step by step on a real VM; silent otherwise.
type Phases struct {
	w       io.Writer
	verb    string
	start   time.Time
	last    time.Time
	enabled bool
}

// NewPhases starts timing verb's steps, written to w when LIMACTL_MCP_DEBUG is 1.
func NewPhases(w io.Writer, verb string) *Phases {
	now := time.Now()
	return &Phases{w: w, verb: verb, start: now, last: now, enabled: os.Getenv("LIMACTL_MCP_DEBUG") == "1"}
}

// Done says that the step what ended now, with the time it took since the previous one.
func (p *Phases) Done(what string) {
	if p == nil || !p.enabled {
		return
	}
	now := time.Now()
	fmt.Fprintf(p.w, "debug: %s: %s in %s (%s since the start)\n", p.verb, what, now.Sub(p.last).Round(time.Millisecond), now.Sub(p.start).Round(time.Millisecond))
	p.last = now
}

// Note says more about the step just done (a line of its own, when LIMACTL_MCP_DEBUG is 1).
func (p *Phases) Note(format string, args ...any) {
	if p == nil || !p.enabled {
		return
	}
	fmt.Fprintf(p.w, "debug: %s:   "+format+"\n", append([]any{p.verb}, args...)...)
}
