package review

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Everything a review prints that came from the guest (names, link targets, messages that
// quote them) is escaped first, in the TUI and in plain text alike: a hostile name must not
// be able to move the cursor, recolour the screen, hide a line or reorder text with bidi
// controls.

// mustEscape reports whether r cannot be printed as is: control characters (C0, DEL, C1),
// format characters (bidi overrides and isolates, zero-width characters, BOM) and line or
// paragraph separators.
func mustEscape(r rune) bool {
	if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// escapeRune writes the visible form of a rune that must be escaped.
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
	return fmt.Sprintf(`\u%04x`, r)
}

// safe returns s with everything unprintable escaped.
func safe(s string) string {
	var b strings.Builder
	for _, sp := range sanitizeSpans(s, 0) {
		b.WriteString(sp.text)
	}
	return b.String()
}

// Sanitize returns s with every character a terminal would not show as itself escaped (for
// plain-text output of messages that may quote guest names).
func Sanitize(s string) string { return safe(s) }

// display escapes a path for a terminal: a name with control or format characters (newlines,
// escape sequences, bidi overrides) or invalid UTF-8 is shown quoted, with Go escapes.
func display(p string) string {
	if utf8.ValidString(p) && !strings.ContainsFunc(p, mustEscape) {
		return p
	}
	return strconv.QuoteToASCII(p)
}
