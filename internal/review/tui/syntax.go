package tui

import (
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/muesli/termenv"

	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Syntax colour, by chroma (a kept library: its lexers and styles; nothing hand-written here).
// Chroma reads the text as the screen shows it, after the sanitiser: an escape is text to it
// (`\x1b`), so no lexer can bring a raw byte of the guest to the terminal; it only chooses
// colours for text that is already safe.

// maxSyntaxBytes bounds the text of one hunk side that is lexed (a minified megabyte line is
// shown without syntax colour).
const maxSyntaxBytes = 64 << 10

// syntaxOn says whether syntax colour is drawn: a colour terminal (not NO_COLOR, which
// lipgloss's profile says as Ascii) and not accessible mode.
func (p *painter) syntaxOn() bool { return !p.plain && p.profile != termenv.Ascii }

// lexerFor is chroma's lexer for a file name, nil when it knows none (or syntax is off).
func (p *painter) lexerFor(path string) chroma.Lexer {
	if !p.syntaxOn() || path == "" {
		return nil
	}
	if l, ok := p.lexers[path]; ok {
		return l
	}
	l := lexers.Match(path)
	if l != nil {
		l = chroma.Coalesce(l)
	}
	if p.lexers == nil {
		p.lexers = map[string]chroma.Lexer{}
	}
	p.lexers[path] = l
	return l
}

// colourRun is a colour from byte offset start of a displayed line on.
type colourRun struct {
	start int
	fg    string // "#rrggbb"; "" for the terminal's own
}

// syntaxRuns lexes the displayed lines of one side of a hunk (joined, so that a construct
// that spans lines is read as one) and returns each line's colour runs.
func (p *painter) syntaxRuns(lexer chroma.Lexer, lines []string) [][]colourRun {
	out := make([][]colourRun, len(lines))
	text := strings.Join(lines, "\n")
	if lexer == nil || len(text) > maxSyntaxBytes {
		return out
	}
	it, err := lexer.Tokenise(nil, text+"\n")
	if err != nil {
		return out
	}
	line, col := 0, 0
	for tok := it(); tok != chroma.EOF; tok = it() {
		fg := tokenColour(tok.Type)
		parts := strings.Split(tok.Value, "\n")
		for k, part := range parts {
			if k > 0 {
				line++
				col = 0
			}
			if line >= len(lines) {
				return out
			}
			if part != "" {
				out[line] = append(out[line], colourRun{start: col, fg: fg})
				col += len(part)
			}
		}
	}
	return out
}

// tokenColour is the colour of a kind of token: one of the terminal's own 16 colours, so that
// it follows the person's theme and reads the same in 16, 256 and truecolour. Red and green
// are never used: they say deleted and added. (Chroma's styles are truecolour schemes whose
// registry alone takes 15 ms to load with every command; these few lines need none.)
func tokenColour(t chroma.TokenType) string {
	switch {
	case t == chroma.Comment || t.InCategory(chroma.Comment):
		return "8" // bright black: faint
	case t.InCategory(chroma.Keyword):
		return "5" // magenta
	case t.InSubCategory(chroma.LiteralString):
		return "3" // yellow
	case t.InSubCategory(chroma.LiteralNumber):
		return "6" // cyan
	case t == chroma.NameFunction || t == chroma.NameBuiltin || t == chroma.NameClass || t.InSubCategory(chroma.NameBuiltin):
		return "4" // blue
	case t == chroma.NameTag || t == chroma.NameAttribute || t == chroma.NameDecorator:
		return "4"
	}
	return ""
}

// applySyntax colours the text spans of hunk lines (body[i] for h.Lines[i]; span 0 is the
// +/-/space mark) by the lexer of path: the old side (context and deleted lines) and the new
// side (context and inserted lines) are each lexed as a run of lines.
func (p *painter) applySyntax(path string, h udiff.Hunk, body [][]span) {
	lexer := p.lexerFor(path)
	if lexer == nil {
		return
	}
	// Only unchanged lines are drawn in syntax colour (painter.paint), but each side is lexed
	// whole, so that the unchanged lines are read in their context.
	for _, side := range []udiff.Op{udiff.Delete, udiff.Insert} {
		var idx []int
		var lines []string
		for i, l := range h.Lines {
			if l.Op == udiff.Equal || l.Op == side {
				idx = append(idx, i)
				lines = append(lines, spanLineText(body[i][1:]))
			}
		}
		runs := p.syntaxRuns(lexer, lines)
		for k, i := range idx {
			if h.Lines[i].Op == udiff.Equal && side == udiff.Insert {
				continue // coloured with the old side
			}
			body[i] = append(body[i][:1:1], splitRuns(body[i][1:], runs[k])...)
		}
	}
}

func spanLineText(sps []span) string {
	var b strings.Builder
	for _, sp := range sps {
		b.WriteString(sp.text)
	}
	return b.String()
}

// splitRuns gives the spans of a line the colours of runs (byte offsets into their joined
// text), splitting a span where a colour starts; an escape is never split (it takes the colour
// its first byte has).
func splitRuns(sps []span, runs []colourRun) []span {
	if len(runs) == 0 {
		return sps // an empty line, or one the lexer gave nothing for
	}
	var out []span
	off, r := 0, 0
	fgAt := func(o int) string {
		for r+1 < len(runs) && runs[r+1].start <= o {
			r++
		}
		if runs[r].start > o {
			return ""
		}
		return runs[r].fg
	}
	for _, sp := range sps {
		sp.syn = true
		if sp.esc {
			sp.fg = fgAt(off)
			out = append(out, sp)
			off += len(sp.text)
			continue
		}
		start := 0
		for start < len(sp.text) {
			fg := fgAt(off + start)
			end := len(sp.text)
			if r+1 < len(runs) && runs[r+1].start-off < end {
				end = runs[r+1].start - off
			}
			if end <= start {
				end = start + 1
				for end < len(sp.text) && !utf8RuneStart(sp.text[end]) {
					end++
				}
			}
			part := sp
			part.text, part.fg = sp.text[start:end], fg
			out = append(out, part)
			start = end
		}
		off += len(sp.text)
	}
	return out
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
