package shellcmd

import (
	"io"
	"sync"
)

// probeFilter passes what the command writes on stderr through to w, except the lines of the
// probe that the script prints after the command (see staging.Probe): those start with
// prefix, which begins with a control character (RS) no program prints in text, and are kept.
// Without a terminal, this saves the ssh session a separate probe would cost.
type probeFilter struct {
	w      io.Writer
	prefix string

	mu        sync.Mutex
	held      []byte // the start of prefix, seen so far
	capturing bool   // after a whole prefix, until the end of its line
	line      []byte
	lines     []string
}

func newProbeFilter(w io.Writer, prefix string) *probeFilter {
	return &probeFilter{w: w, prefix: prefix}
}

func (f *probeFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]byte, 0, len(p))
	for _, c := range p {
		if f.capturing {
			if c == '\n' {
				f.lines = append(f.lines, string(f.line))
				f.line, f.capturing = nil, false
			} else {
				f.line = append(f.line, c)
			}
			continue
		}
		if c == f.prefix[len(f.held)] {
			f.held = append(f.held, c)
			if len(f.held) == len(f.prefix) {
				f.held, f.capturing = nil, true
			}
			continue
		}
		if len(f.held) > 0 {
			out = append(out, f.held...)
			f.held = nil
			if c == f.prefix[0] {
				f.held = append(f.held, c)
				continue
			}
		}
		out = append(out, c)
	}
	if len(out) > 0 {
		if _, err := f.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Lines returns the probe's lines, and passes on what was held back at the end.
func (f *probeFilter) Lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.held) > 0 {
		_, _ = f.w.Write(f.held)
		f.held = nil
	}
	if f.capturing && len(f.line) > 0 {
		f.lines = append(f.lines, string(f.line))
		f.line, f.capturing = nil, false
	}
	return append([]string(nil), f.lines...)
}
