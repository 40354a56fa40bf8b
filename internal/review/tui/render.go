package tui

import (
	"fmt"
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-runewidth"
	"github.com/muesli/termenv"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Everything the TUI prints that came from the guest (paths, file contents, descriptions,
// link targets) goes through internal/termsafe first.

// span is a piece of text to print; esc marks an escape sequence standing for a character
// that could not be printed as is (shown highlighted so it is not mistaken for source text).
type span struct {
	text string
	esc  bool
	op   udiff.Op // colour of the line the span belongs to (0: none)
	meta bool     // a hunk header or a note ("\ No newline at end of file")
	word bool     // a changed word of a line that replaced another (word-level highlight)
	syn  bool     // the line is syntax coloured; fg is the colour of this span ("": none)
	fg   string
}

// sanitizeSpans is termsafe.Pieces as spans.
func sanitizeSpans(s string, tabWidth int) []span {
	var out []span
	for _, p := range termsafe.Pieces(s, tabWidth) {
		out = append(out, span{text: p.Text, esc: p.Escaped})
	}
	return out
}

// displayName is how an item's path is shown: review.Item.Name, through the sanitiser (the
// core carries guest text as it is; the TUI escapes it where it prints).
func displayName(it *review.Item) string { return termsafe.String(it.Name()) }

// painter turns spans into terminal text: coloured, or plain for accessible mode.
type painter struct {
	plain bool
	// markup escapes the characters huh's Note treats as markup (\ _ * `).
	markup                      bool
	add, del, hunk, meta, escSt lipgloss.Style
	addWord, delWord, wordEsc   lipgloss.Style
	base                        lipgloss.Style // no style, of this renderer (its colour profile)
	title, dim                  lipgloss.Style
	// hideWS shows a line replaced by one that differs only in white space as one unchanged
	// line (the "w" key; what is applied is the same).
	hideWS bool
	// Syntax colour (syntax.go): the terminal's colour profile and background, the lexers
	// found by file name, chroma's style.
	profile termenv.Profile
	lexers  map[string]chroma.Lexer
	// sbs is the choice of layout in the diff view ("s"): 0 side by side on a wide terminal,
	// 1 side by side, -1 unified (sidebyside.go).
	sbs int
}

func newPainter(r *lipgloss.Renderer, plain bool) *painter {
	prof := r.ColorProfile()
	return &painter{
		profile: prof,
		plain:   plain,
		base:    r.NewStyle(),
		add:     r.NewStyle().Foreground(lipgloss.Color("2")),
		del:     r.NewStyle().Foreground(lipgloss.Color("1")),
		hunk:    r.NewStyle().Foreground(lipgloss.Color("6")),
		meta:    r.NewStyle().Faint(true),
		escSt:   r.NewStyle().Reverse(true),
		// A changed word is the line's colour in reverse video (a background of the line's
		// colour, in 16 colours as in truecolour); an escape inside it is underlined instead.
		addWord: r.NewStyle().Foreground(lipgloss.Color("2")).Reverse(true).Bold(true),
		delWord: r.NewStyle().Foreground(lipgloss.Color("1")).Reverse(true).Bold(true),
		wordEsc: r.NewStyle().Underline(true),
		title:   r.NewStyle().Bold(true).Reverse(true),
		dim:     r.NewStyle().Faint(true),
	}
}

// forNote returns a copy of p whose output goes into a huh Note description.
func (p *painter) forNote() *painter {
	q := *p
	q.markup = !p.plain
	q.sbs = -1 // a Note is a preview: unified
	return &q
}

var noteMarkup = strings.NewReplacer(`\`, `\\`, `_`, `\_`, `*`, `\*`, "`", "\\`")

// paint renders one line of spans.
func (p *painter) paint(line []span) string {
	var b strings.Builder
	for _, sp := range line {
		t := sp.text
		if p.markup {
			t = noteMarkup.Replace(t)
		}
		if p.plain {
			b.WriteString(t)
			continue
		}
		st := p.base
		switch {
		case sp.syn && sp.op == udiff.Equal:
			// Syntax colour on unchanged lines; a changed line keeps its red or green (and its
			// word marks) in every colour profile: that is the cue a review is read by.
			if sp.fg != "" {
				st = st.Foreground(lipgloss.Color(sp.fg))
			}
		case sp.meta && sp.op == '@':
			st = p.hunk
		case sp.meta:
			st = p.meta
		case sp.op == udiff.Insert && sp.word:
			st = p.addWord
		case sp.op == udiff.Delete && sp.word:
			st = p.delWord
		case sp.op == udiff.Insert:
			st = p.add
		case sp.op == udiff.Delete:
			st = p.del
		}
		if sp.esc && sp.word {
			st = st.Inherit(p.wordEsc)
		} else if sp.esc {
			st = st.Inherit(p.escSt)
		}
		b.WriteString(st.Render(t))
	}
	return b.String()
}

// wrapSpans hard-wraps a line of spans at width cells. Continuation lines start with cont
// (in the line's colour). Nothing is ever cut off: a reviewer must see every character.
func wrapSpans(line []span, width int, cont string) [][]span {
	if width < 8 {
		width = 8
	}
	var out [][]span
	var cur []span
	col := 0
	var op udiff.Op
	var meta bool
	if len(line) > 0 {
		op, meta = line[0].op, line[0].meta
	}
	newLine := func() {
		out = append(out, cur)
		cur = []span{{text: cont, op: op, meta: meta}}
		col = runewidth.StringWidth(cont)
	}
	for _, sp := range line {
		if sp.esc {
			// An escape is never split.
			if col+len(sp.text) > width && col > 0 {
				newLine()
			}
			cur = append(cur, sp)
			col += len(sp.text)
			continue
		}
		var b strings.Builder
		for _, r := range sp.text {
			w := runewidth.RuneWidth(r)
			if col+w > width && col > 0 {
				if b.Len() > 0 {
					part := sp
					part.text = b.String()
					cur = append(cur, part)
					b.Reset()
				}
				newLine()
			}
			b.WriteRune(r)
			col += w
		}
		if b.Len() > 0 {
			part := sp
			part.text = b.String()
			cur = append(cur, part)
		}
	}
	out = append(out, cur)
	return out
}

// textLine is a line of plain text (a name, a description) as spans.
func textLine(s string, op udiff.Op, meta bool) []span {
	sps := sanitizeSpans(s, 0)
	for i := range sps {
		sps[i].op, sps[i].meta = op, meta
	}
	if len(sps) == 0 {
		sps = []span{{op: op, meta: meta}}
	}
	return sps
}

// hunkLines renders a hunk as wrapped, painted lines of at most width cells: a line that
// replaced another has its changed words marked (and the other its removed ones); with hideWS
// a line replaced by one that differs only in white space is shown once, unchanged.
func (p *painter) hunkLines(h udiff.Hunk, width int) []string { return p.hunkLinesOf(h, width, "") }

// hunkLinesOf is hunkLines with the syntax colour of the file at path (by its name).
func (p *painter) hunkLinesOf(h udiff.Hunk, width int, path string) []string {
	var out []string
	add := func(line []span) {
		for _, l := range wrapSpans(line, width, "↪") {
			out = append(out, p.paint(l))
		}
	}
	header := []span{{text: h.Header(), op: '@', meta: true}}
	if h.WhitespaceOnly() {
		note := "  white space only"
		if p.hideWS {
			note += " (hidden: w shows it)"
		}
		header = append(header, span{text: note, meta: true})
	}
	add(header)
	body := contentLines(h)
	p.applySyntax(path, h, body)
	skip := map[int]bool{}
	if p.hideWS {
		for _, pr := range h.Pairs() {
			if udiff.WhitespaceOnly(strings.TrimSuffix(h.Lines[pr.Del].Text, "\n"), strings.TrimSuffix(h.Lines[pr.Ins].Text, "\n")) {
				skip[pr.Del] = true
				body[pr.Ins] = plainContent(h.Lines[pr.Ins].Text, udiff.Equal)
			}
		}
	}
	if p.sideBySideOn(width) {
		return append(out, p.sideBySide(h, body, skip, width)...)
	}
	for i, l := range h.Lines {
		if skip[i] {
			continue
		}
		add(body[i])
		if !strings.HasSuffix(l.Text, "\n") {
			add([]span{{text: `\ No newline at end of file`, meta: true}})
		}
	}
	return out
}

// plainContent is a line of a file as spans: its op's mark, then the text sanitised (tabs
// expanded).
func plainContent(text string, op udiff.Op) []span {
	line := []span{{text: string(byte(op)), op: op}}
	for _, sp := range sanitizeSpans(strings.TrimSuffix(text, "\n"), 4) {
		sp.op = op
		line = append(line, sp)
	}
	return line
}

// contentLines are the lines of h as spans, with word-level marks on the lines that replaced
// one another (udiff.Hunk.Pairs). The words are compared as shown, after the sanitiser: an
// escape is one word, and a hostile byte can only ever be marked, never printed.
func contentLines(h udiff.Hunk) [][]span {
	out := make([][]span, len(h.Lines))
	for i, l := range h.Lines {
		out[i] = plainContent(l.Text, l.Op)
	}
	for _, pr := range h.Pairs() {
		a, b := wordSpans(out[pr.Del][1:]), wordSpans(out[pr.Ins][1:])
		ca, cb, ok := udiff.TokenDiff(spanTexts(a), spanTexts(b))
		if !ok || !similar(a, ca) || !similar(b, cb) {
			continue // too different to pair word by word: the whole lines are the change
		}
		for k := range a {
			a[k].word = ca[k]
		}
		for k := range b {
			b[k].word = cb[k]
		}
		out[pr.Del] = append(out[pr.Del][:1:1], a...)
		out[pr.Ins] = append(out[pr.Ins][:1:1], b...)
	}
	return out
}

// wordSpans splits sanitised spans into words (udiff.WordTokens); an escape stays one span.
func wordSpans(sps []span) []span {
	var out []span
	for _, sp := range sps {
		if sp.esc {
			out = append(out, sp)
			continue
		}
		for _, t := range udiff.WordTokens(sp.text) {
			w := sp
			w.text = t
			out = append(out, w)
		}
	}
	return out
}

func spanTexts(sps []span) []string {
	out := make([]string, len(sps))
	for i, sp := range sps {
		out[i] = sp.text
	}
	return out
}

// similar says whether enough of a line stayed (at least a third of its non-blank text) for
// word marks to help; below that, marking nearly every word is noise.
func similar(sps []span, changed []bool) bool {
	kept, all := 0, 0
	for i, sp := range sps {
		n := len(strings.TrimSpace(sp.text))
		all += n
		if !changed[i] {
			kept += n
		}
	}
	return all == 0 || kept*3 >= all
}

// textLines renders plain text (possibly several lines) wrapped at width.
func (p *painter) textLines(s string, width int) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, w := range wrapSpans(textLine(l, 0, false), width, "  ") {
			out = append(out, p.paint(w))
		}
	}
	return out
}

// itemDoc renders everything there is to see about an item: its description, and for a
// text item the whole diff. hunkAt[i] is the line where hunk i starts.
func (p *painter) itemDoc(it *review.Item, width int) (lines []string, hunkAt []int) {
	lines = append(lines, p.historyLines(it, width)...) // provenance.go
	if it.Refused != "" {
		lines = append(lines, p.textLines("refused: "+it.Refused, width)...)
	}
	if it.Conflict {
		lines = append(lines, p.textLines("conflict: the host changed this path too; the diff is the agent's change (baseline → guest)", width)...)
	}
	if it.Description != "" {
		lines = append(lines, p.textLines(it.Description, width)...)
	}
	if info := entryInfo(it); info != "" {
		lines = append(lines, p.textLines(info, width)...)
	}
	// An added or deleted text file (and a conflict's text) shows its lines like any diff;
	// only an edit of a text file (it.Text) is chosen hunk by hunk.
	if len(it.Hunks) > 0 {
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		for _, h := range it.Hunks {
			hunkAt = append(hunkAt, len(lines))
			lines = append(lines, p.hunkLinesOf(h, width, it.Path)...)
		}
	} else if it.Text {
		lines = append(lines, p.textLines("(no content change)", width)...)
	} else if len(lines) == 0 {
		lines = append(lines, p.textLines("(no text diff to show)", width)...)
	}
	return lines, hunkAt
}

// entryInfo describes what changed in the entries themselves (type, mode, link target).
func entryInfo(it *review.Item) string {
	b, g := it.Base, it.Guest
	if it.Moved {
		b = it.From.Base // a rename: the old name's entry
	}
	var parts []string
	switch {
	case b == nil && g != nil:
		parts = append(parts, "new "+string(g.Type)+" "+tree.ModeString(g.Mode))
	case b != nil && g == nil:
		parts = append(parts, "deleted "+string(b.Type))
	case b != nil && g != nil:
		if b.Type != g.Type {
			parts = append(parts, string(b.Type+" → "+g.Type))
		}
		if b.Mode != g.Mode && b.Type == g.Type {
			parts = append(parts, "mode "+tree.ModeString(b.Mode)+" → "+tree.ModeString(g.Mode))
		}
	}
	if g != nil && g.Type == "symlink" {
		t := "link target: " + string(g.Target)
		if b != nil && b.Type == "symlink" && b.Target != g.Target {
			t = "link target: " + string(b.Target) + " → " + string(g.Target)
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "; ")
}

// modeChange returns "644 → 755" when both sides have a mode.
func modeChange(it *review.Item) (string, bool) {
	if it.Base == nil || it.Guest == nil || it.Base.Mode == it.Guest.Mode {
		return "", false
	}
	return tree.ModeString(it.Base.Mode) + " → " + tree.ModeString(it.Guest.Mode), true
}

// countStr is "+3 −1" for an item with a text diff.
func countStr(it *review.Item) string {
	if len(it.Hunks) == 0 {
		return ""
	}
	return fmt.Sprintf("+%d −%d", it.Added, it.Removed)
}

// label is the one-line summary of an item in the file list, e.g. "M path  +3 −1".
func label(it *review.Item) string {
	name := displayName(it)
	var s string
	switch it.Kind {
	case staging.Added:
		s = "A " + name
	case staging.Deleted:
		s = "D " + name
	case staging.ModeChanged:
		s = "mode " + name
		if mc, ok := modeChange(it); ok {
			s += " (" + mc + ")"
		}
	case staging.LinkChanged:
		s = "link " + name
	case staging.TypeChanged:
		s = "type " + name
	default:
		s = "M " + name
	}
	if it.From != nil {
		s = "R " + displayName(it.From) + " → " + name
	}
	if it.Conflict {
		s = "C " + s
	}
	switch {
	case len(it.Hunks) > 0:
		s += "  " + countStr(it)
		if it.Text && len(it.Hunks) > 1 {
			s += fmt.Sprintf(" (%d hunks)", len(it.Hunks))
		}
	case it.Moved && it.Text:
		s += "  (same content)"
	case it.Description != "" && it.Kind != staging.ModeChanged:
		s += "  " + termsafe.String(it.Description)
	}
	if it.SetsPolicy() != "" {
		// First, where no truncation hides it: this file can widen the agent's own policy.
		s = policyMark + s
	}
	return s
}

// policyMark starts the label of a file that sets what an agent may do or reach
// (review.SetsPolicy: .mcp.json, .claude/settings.json, .limactl-mcp*...).
const policyMark = "⚠ POLICY "
