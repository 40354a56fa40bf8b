package udiff

import (
	"reflect"
	"strings"
	"testing"
)

func TestWordTokensJoinToTheLine(t *testing.T) {
	for _, s := range []string{"", "a", "foo(bar, baz_1) ", "\t x := y+1 // ünïcode", "\xff\xfe bad utf8", "a  b\r"} {
		if got := strings.Join(WordTokens(s), ""); got != s {
			t.Errorf("WordTokens(%q) joined = %q", s, got)
		}
	}
	if got, want := WordTokens("foo(bar, baz_1)"), []string{"foo", "(", "bar", ",", " ", "baz_1", ")"}; !reflect.DeepEqual(got, want) {
		t.Errorf("WordTokens = %q, want %q", got, want)
	}
}

func TestTokenDiffMarksOnlyTheChangedWord(t *testing.T) {
	a := WordTokens("return fetch(url, timeout)")
	b := WordTokens("return fetch(url, deadline)")
	ca, cb, ok := TokenDiff(a, b)
	if !ok {
		t.Fatal("not diffed")
	}
	mark := func(ts []string, c []bool) string {
		var s strings.Builder
		for i, t := range ts {
			if c[i] {
				s.WriteString("[" + t + "]")
			} else {
				s.WriteString(t)
			}
		}
		return s.String()
	}
	if got := mark(a, ca); got != "return fetch(url, [timeout])" {
		t.Errorf("old: %s", got)
	}
	if got := mark(b, cb); got != "return fetch(url, [deadline])" {
		t.Errorf("new: %s", got)
	}
}

func TestWhitespaceOnly(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"a b", "a  b", true},
		{"\tx := 1", "    x := 1", true},
		{"x := 1", "x := 1\r", true},
		{"a b", "ab", false},
		{"a", "a", false},
		{"a", "b", false},
	} {
		if got := WhitespaceOnly(c.a, c.b); got != c.want {
			t.Errorf("WhitespaceOnly(%q, %q) = %v", c.a, c.b, got)
		}
	}
	h := Hunks("a\n  b\nc\n", "a\n\tb\nc\n")[0]
	if !h.WhitespaceOnly() || len(h.Pairs()) != 1 {
		t.Errorf("re-indented line: whitespace only %v, pairs %v", h.WhitespaceOnly(), h.Pairs())
	}
	if h := Hunks("a\nb\n", "a\n b\nc\n")[0]; h.WhitespaceOnly() {
		t.Error("a hunk that adds a line is not whitespace only")
	}
}
