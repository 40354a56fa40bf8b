// Package termsafe is the one place text from the guest is made safe to print on a terminal.
//
// Everything a review or a command prints that came from the guest (names, link targets, file
// contents, messages that quote them) goes through it, in the TUI and in plain text alike: a
// hostile name must not be able to move the cursor, recolour the screen, hide a line or
// reorder text with bidi controls.
package termsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// MustEscape reports whether r cannot be printed as is: control characters (C0, DEL, C1),
// format characters (bidi overrides and isolates, zero-width characters, BOM) and line or
// paragraph separators.
func MustEscape(r rune) bool {
	if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// escapeRune is the visible form of a rune that must be escaped.
func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	if r > 0xffff {
		return fmt.Sprintf(`\U%08x`, r) // a tag character, say: not \ue0041, which reads as \ue004 and 1
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// Piece is a run of text to print; Escaped marks an escape sequence standing for a character
// that could not be printed as is (a TUI shows it highlighted, so that it is not mistaken for
// the text itself).
type Piece struct {
	Text    string
	Escaped bool
}

// Pieces splits s into printable text and escapes. With tabWidth > 0 tabs are expanded to
// that tab stop (for file contents), otherwise they are escaped (for names).
func Pieces(s string, tabWidth int) []Piece {
	var out []Piece
	var b strings.Builder
	col := 0
	flush := func() {
		if b.Len() > 0 {
			out = append(out, Piece{Text: b.String()})
			b.Reset()
		}
	}
	esc := func(e string) {
		flush()
		out = append(out, Piece{Text: e, Escaped: true})
		col += len(e)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			esc(fmt.Sprintf(`\x%02x`, s[i]))
		case r == '\t' && tabWidth > 0:
			n := tabWidth - col%tabWidth
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case MustEscape(r):
			esc(escapeRune(r))
		default:
			b.WriteRune(r)
			col += runewidth.RuneWidth(r)
		}
		i += size
	}
	flush()
	return out
}

// String returns s with every character a terminal would not show as itself escaped.
func String(s string) string {
	var b strings.Builder
	for _, p := range Pieces(s, 0) {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Path is how a path is shown: as it is when every character prints as itself, else quoted
// with Go escapes (newlines, escape sequences, bidi overrides, invalid UTF-8).
func Path(p string) string {
	if utf8.ValidString(p) && !strings.ContainsFunc(p, MustEscape) {
		return p
	}
	return strconv.QuoteToASCII(p)
}

// Lines is s as an error or a message is printed: every line escaped as String escapes it,
// the lines kept apart, each after the first indented by indent, so that a line break in guest
// text cannot start a line that looks like one of ours.
func Lines(s, indent string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = String(l)
	}
	return strings.Join(lines, "\n"+indent)
}
