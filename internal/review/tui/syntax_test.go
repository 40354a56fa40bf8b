package tui

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

func paintedAt(prof termenv.Profile) *painter {
	r := lipgloss.NewRenderer(&bytes.Buffer{})
	r.SetColorProfile(prof)
	return newPainter(r, false)
}

const goOld = "package net\n\nfunc get() error {\n\treturn fetch(url, timeout)\n}\n"
const goNew = "package net\n\nfunc get() error {\n\treturn fetch(url, deadline)\n}\n"

// Syntax colour by file type: a Go keyword of an unchanged line is coloured in 16, 256 and
// truecolour; a changed line keeps its red or green, its changed word marked.
func TestSyntaxColourProfiles(t *testing.T) {
	h := udiff.Hunks(goOld, goNew)[0]
	for _, c := range []struct {
		prof        termenv.Profile
		keyword, bg *regexp.Regexp
	}{
		{termenv.ANSI, regexp.MustCompile(`\x1b\[(9[0-7]|3[0-7])mfunc`), regexp.MustCompile(`\x1b\[32m\+`)},
		{termenv.ANSI256, regexp.MustCompile(`\x1b\[35mfunc`), regexp.MustCompile(`\x1b\[32m\+`)},
		{termenv.TrueColor, regexp.MustCompile(`\x1b\[35mfunc`), regexp.MustCompile(`\x1b\[32m\+`)},
	} {
		out := strings.Join(paintedAt(c.prof).hunkLinesOf(h, 80, "net/fetch.go"), "\n")
		if !c.keyword.MatchString(out) {
			t.Errorf("profile %v: keyword not coloured:\n%q", c.prof, out)
		}
		if !c.bg.MatchString(out) || !regexp.MustCompile(`\x1b\[1;7;32mdeadline`).MatchString(out) {
			t.Errorf("profile %v: changed line not marked:\n%q", c.prof, out)
		}
		// An unknown file type has no syntax colour: "func" is not coloured.
		plainOut := strings.Join(paintedAt(c.prof).hunkLinesOf(h, 80, "notes.unknownext"), "\n")
		if regexp.MustCompile(`m func`).MatchString(plainOut) || strings.Contains(plainOut, "[35m") {
			t.Errorf("profile %v: an unknown type is syntax coloured:\n%q", c.prof, plainOut)
		}
	}
	// Off in accessible mode and without colour (NO_COLOR: lipgloss's Ascii profile).
	for _, p := range []*painter{newPainter(lipgloss.NewRenderer(&bytes.Buffer{}), true), paintedAt(termenv.Ascii)} {
		if out := strings.Join(p.hunkLinesOf(h, 80, "net/fetch.go"), "\n"); strings.Contains(out, "\x1b") {
			t.Errorf("escape sequences with syntax colour off:\n%q", out)
		}
	}
}

func TestSideBySideWidths(t *testing.T) {
	p := paintedAt(termenv.ANSI256)
	if p.sideBySideOn(autoSideBySide-1) || !p.sideBySideOn(autoSideBySide) {
		t.Error("not side by side from autoSideBySide columns on")
	}
	p.toggleSideBySide(minSideBySide - 1)
	if p.sideBySideOn(minSideBySide - 1) {
		t.Error("side by side below minSideBySide")
	}
	p.toggleSideBySide(autoSideBySide)
	if p.sideBySideOn(autoSideBySide) {
		t.Error("s does not go back to unified")
	}
	p.toggleSideBySide(minSideBySide)
	if !p.sideBySideOn(minSideBySide) {
		t.Error("s does not lay it out side by side at minSideBySide")
	}
	if plain := newPainter(lipgloss.NewRenderer(&bytes.Buffer{}), true); plain.sideBySideOn(400) {
		t.Error("side by side in accessible mode")
	}
	// Every row of a side-by-side hunk is width cells at most, the halves apart at one column.
	h := udiff.Hunks(goOld, goNew+"\tlonger line that wraps "+strings.Repeat("x", 120)+"\n")[0]
	for _, l := range p.sideBySide(h, contentLines(h), nil, 120) {
		if w := ansi.StringWidth(l); w > 120 {
			t.Errorf("a row of %d cells: %q", w, l)
		}
		if i := strings.Index(ansi.Strip(l), "│"); ansi.StringWidth(ansi.Strip(l)[:i]) != (120-3)/2+1 {
			t.Errorf("the separator at %d: %q", i, ansi.Strip(l))
		}
	}
}
