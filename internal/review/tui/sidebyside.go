package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Side by side: the old version on the left, the new on the right, a changed line next to the
// line it replaced, each side with its line numbers. The diff view shows it on a wide terminal
// (autoSideBySide columns or more); "s" toggles it from minSideBySide columns on.
const (
	minSideBySide  = 100
	autoSideBySide = 160
)

// sideBySideOn says whether hunks are laid out side by side at width.
func (p *painter) sideBySideOn(width int) bool {
	if p.plain || width < minSideBySide {
		return false
	}
	switch p.sbs {
	case 1:
		return true
	case -1:
		return false
	}
	return width >= autoSideBySide
}

// toggleSideBySide switches between side by side and unified at width.
func (p *painter) toggleSideBySide(width int) {
	if p.sideBySideOn(width) {
		p.sbs = -1
	} else {
		p.sbs = 1
	}
}

// sbsCell is one side of a row: a line of the file (no: its number) or nothing (no = 0).
type sbsCell struct {
	no    int
	spans []span // the +/-/space mark and the text
	noEOL bool
}

// sideBySide lays out the body of h (contentLines, with hidden white-space pairs as skip) in
// two columns of width cells in all.
func (p *painter) sideBySide(h udiff.Hunk, body [][]span, skip map[int]bool, width int) []string {
	type row struct{ l, r sbsCell }
	var rows []row
	oldNo, newNo := h.OldStart, h.NewStart
	if h.OldLines == 0 {
		oldNo++
	}
	if h.NewLines == 0 {
		newNo++
	}
	cellOf := func(i, no int) sbsCell {
		return sbsCell{no: no, spans: body[i], noEOL: !strings.HasSuffix(h.Lines[i].Text, "\n")}
	}
	for i := 0; i < len(h.Lines); {
		l := h.Lines[i]
		if l.Op == udiff.Equal {
			rows = append(rows, row{cellOf(i, oldNo), cellOf(i, newNo)})
			oldNo++
			newNo++
			i++
			continue
		}
		var dels, ins []int
		for i < len(h.Lines) && h.Lines[i].Op == udiff.Delete {
			dels = append(dels, i)
			i++
		}
		for i < len(h.Lines) && h.Lines[i].Op == udiff.Insert {
			ins = append(ins, i)
			i++
		}
		for k := 0; k < max(len(dels), len(ins)); k++ {
			var rw row
			if k < len(dels) {
				rw.l = cellOf(dels[k], oldNo)
				oldNo++
				if skip[dels[k]] {
					// White space hidden: the old line shown unchanged, next to the new one.
					rw.l.spans = plainContent(h.Lines[dels[k]].Text, udiff.Equal)
				}
			}
			if k < len(ins) {
				rw.r = cellOf(ins[k], newNo)
				newNo++
			}
			rows = append(rows, rw)
		}
	}
	numW := len(fmt.Sprint(max(oldNo, newNo)))
	colW := (width - 3) / 2
	var out []string
	for _, rw := range rows {
		left, right := p.sbsCell(rw.l, numW, colW), p.sbsCell(rw.r, numW, colW)
		for k := 0; k < max(len(left), len(right)); k++ {
			a, b := strings.Repeat(" ", colW), ""
			if k < len(left) {
				a = left[k]
			}
			if k < len(right) {
				b = right[k]
			}
			out = append(out, a+p.dim.Render(" │ ")+b)
		}
	}
	return out
}

// sbsCell renders a cell wrapped at colW cells, every line padded to colW.
func (p *painter) sbsCell(c sbsCell, numW, colW int) []string {
	if c.no == 0 {
		return []string{strings.Repeat(" ", colW)}
	}
	line := append([]span{{text: fmt.Sprintf("%*d ", numW, c.no), meta: true}}, c.spans...)
	var out []string
	pad := func(sps []span) {
		s := p.paint(sps)
		out = append(out, s+strings.Repeat(" ", max(0, colW-ansi.StringWidth(s))))
	}
	for _, w := range wrapSpans(line, colW, strings.Repeat(" ", numW)+"↪") {
		pad(w)
	}
	if c.noEOL {
		for _, w := range wrapSpans([]span{{text: `\ No newline at end of file`, meta: true}}, colW, "") {
			pad(w)
		}
	}
	return out
}
