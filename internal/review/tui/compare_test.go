package tui

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe/termsafetest"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// A compare's versions hold guest text (names, lines, descriptions): side by side and one
// after another, in colour, what reaches the terminal is the text escaped plus SGR sequences
// only.
func TestCompareVersionsSanitized(t *testing.T) {
	hostile := termsafetest.All()
	name := "x" + hostile + ".txt"
	item := func(now string) *review.Item {
		base := "a\n" + hostile + "\nc\n"
		d := udiff.Diff(base, now)
		return &review.Item{Path: name, Display: termsafeDisplay(name), Kind: staging.Modified, Text: true, Description: "modified " + hostile,
			Base:  &tree.Entry{Type: tree.File, Hash: tree.Hash([]byte(base))},
			Guest: &tree.Entry{Type: tree.File, Hash: tree.Hash([]byte(now))}, BaseText: base, GuestText: now, Hunks: d.Hunks}
	}
	cp := &review.ComparedPath{Path: name, Display: termsafeDisplay(name),
		Items: []*review.Item{item("a\nb" + hostile + "\nc\n"), item("a\n" + hostile + "\nC" + hostile + "\n"), nil}, Variants: [][]int{{0}, {1}}}
	c := &review.Compared{Names: []string{"try1", "try2", "try3"}, Paths: []*review.ComparedPath{cp}}
	colour := lipgloss.NewRenderer(&bytes.Buffer{})
	colour.SetColorProfile(termenv.TrueColor)
	r := &reviewer{paint: newPainter(colour, false)}
	sgr := regexp.MustCompile(`\x1b\[[0-9;]*m`)
	for _, width := range []int{80, 200} {
		lines := r.variantsLines(r.paint, c, cp, width)
		text := strings.Join(lines, "\n")
		if strings.ContainsAny(sgr.ReplaceAllString(text, ""), "\x1b\x07\x9b\r") {
			t.Errorf("width %d: a control character reached the screen:\n%q", width, text)
		}
		if !strings.Contains(text, "A: try1") || !strings.Contains(text, "B: try2") || !strings.Contains(text, "try3: unchanged") {
			t.Errorf("width %d: versions:\n%s", width, text)
		}
		side := false
		for _, l := range lines {
			side = side || strings.Contains(l, "A: try1") && strings.Contains(l, "B: try2")
		}
		if side != (width >= sideBySideFrom) {
			t.Errorf("width %d: side by side %v", width, side)
		}
	}
}

func termsafeDisplay(p string) string { return termsafe.Path(p) }
