package termsafe

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer is the printer's last line: everything a command writes for a person (errors,
// warnings, progress, summaries, patches shown on a terminal) passes through one, which escapes
// every character a terminal would not show as itself, as String does, except the newlines and
// tabs of the text's own layout. What a command prints is a mix of our own words and text
// from the guest (names, labels, messages that quote them); a Writer makes the mix safe as a
// whole, so that no path that forgets to escape a guest name can reach the terminal raw.
// Text already escaped (String, Path, %q) is printable and passes through unchanged: nothing
// is escaped twice.
//
// A Writer is safe for concurrent use. A rune split across two writes is held back until the
// next write completes it (or shows it escaped, if the next write does not).
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte // the start of a rune the last write ended in
	buf     []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Unwrap is the writer underneath.
func (t *Writer) Unwrap() io.Writer { return t.w }

// Write escapes p and writes it; it reports len(p) when the whole escaped text was written.
func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	in := p
	if len(t.pending) > 0 {
		in = append(append([]byte(nil), t.pending...), p...)
		t.pending = t.pending[:0]
	}
	out := t.buf[:0]
	for i := 0; i < len(in); {
		r, size := utf8.DecodeRune(in[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			if !utf8.FullRune(in[i:]) && len(in)-i < utf8.UTFMax {
				// Possibly a rune the next write completes.
				t.pending = append(t.pending, in[i:]...)
				i = len(in)
				continue
			}
			out = append(out, `\x`...)
			out = append(out, hex[in[i]>>4], hex[in[i]&0xf])
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case MustEscape(r):
			out = append(out, escapeRune(r)...)
		default:
			out = append(out, in[i:i+size]...)
		}
		i += size
	}
	t.buf = out
	if len(out) == 0 {
		return len(p), nil
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

const hex = "0123456789abcdef"
