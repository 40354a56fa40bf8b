package tui

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/limactl-mcp/limactl-mcp/internal/termsafe/termsafetest"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// The escape-class sweep for word-level marks: a line holding each class of terminal control
// replaced by one that changes a word before, inside or after it, rendered with and without
// white space hidden, in colour and plain. The plain rendering holds no control at all, and
// the coloured one is the plain one plus SGR sequences only (so no hostile byte rides in the
// colouring).
func TestWordMarksSweep(t *testing.T) {
	colour := lipgloss.NewRenderer(&bytes.Buffer{})
	colour.SetColorProfile(termenv.TrueColor)
	plain, painted := newPainter(lipgloss.NewRenderer(&bytes.Buffer{}), true), newPainter(colour, false)
	sgr := regexp.MustCompile(`\x1b\[[0-9;]*m`)
	noColour := paintedAt(termenv.Ascii)
	noColour.sbs, painted.sbs = 1, 1
	samples := []string{termsafetest.All()}
	for _, c := range termsafetest.Classes {
		samples = append(samples, c.Sample)
	}
	for _, s := range samples {
		for _, pair := range [][2]string{
			{"x := f(" + s + ", a)\n", "x := f(" + s + ", b)\n"},
			{"x := f(" + s + ")\n", "x := f(" + s + "z)\n"},
			{"  y " + s + "\n", "\ty  " + s + "\n"},
			{s + "\n", "q" + s + "\n"},
		} {
			h := udiff.Hunks("ctx\n"+pair[0], "ctx\n"+pair[1])[0]
			for _, hide := range []bool{false, true} {
				plain.hideWS, painted.hideWS = hide, hide
				p := strings.Join(plain.hunkLinesOf(h, 60, "x.go"), "\n")
				c := strings.Join(painted.hunkLinesOf(h, 60, "x.go"), "\n")
				termsafetest.Check(t, "word marks (plain)", []byte(p))
				if got := sgr.ReplaceAllString(c, ""); got != p {
					t.Errorf("the coloured rendering is not the plain one plus SGR:\n%q\n%q", got, p)
				}
				// Side by side (no colour: a painter of lipgloss's Ascii profile draws no SGR).
				noColour.hideWS, painted.hideWS = hide, hide
				nc := strings.Join(noColour.hunkLinesOf(h, 130, "x.go"), "\n")
				c = strings.Join(painted.hunkLinesOf(h, 130, "x.go"), "\n")
				termsafetest.Check(t, "side by side", []byte(nc))
				if !strings.Contains(nc, " │ ") {
					t.Fatalf("not side by side: %q", nc)
				}
				if got := sgr.ReplaceAllString(c, ""); got != nc {
					t.Errorf("side by side: the coloured rendering is not the plain one plus SGR:\n%q\n%q", got, nc)
				}
			}
		}
	}
}

// A word mark is drawn in colour (reverse video) on the changed word only.
func TestWordMarksOnlyTheWord(t *testing.T) {
	colour := lipgloss.NewRenderer(&bytes.Buffer{})
	colour.SetColorProfile(termenv.ANSI256)
	p := newPainter(colour, false)
	h := udiff.Hunks("a\nreturn fetch(url, timeout)\n", "a\nreturn fetch(url, deadline)\n")[0]
	out := strings.Join(p.hunkLines(h, 80), "\n")
	if !regexp.MustCompile(`\x1b\[[0-9;]*7[0-9;]*mdeadline`).MatchString(out) || !regexp.MustCompile(`\x1b\[[0-9;]*7[0-9;]*mtimeout`).MatchString(out) {
		t.Errorf("the changed words are not marked:\n%q", out)
	}
	if regexp.MustCompile(`\x1b\[[0-9;]*7[0-9;]*mreturn`).MatchString(out) {
		t.Errorf("an unchanged word is marked:\n%q", out)
	}
}
