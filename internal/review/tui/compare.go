package tui

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// Compare mode (review --compare): for every path the sessions changed, their versions one
// after another (side by side on a wide terminal), and a pick: one session's version, hunks of
// several, or none; then the confirmation of exactly what the picks write.

// sideBySideFrom is the width from which a compare shows the versions side by side.
const sideBySideFrom = 160

// Choices of a compared path besides its variants (0, 1, …).
const (
	pickLeave = -1
	pickHunks = -2
	pickView  = -3
)

// RunCompare lets a person pick what to take of every path of c, then confirm the merged
// plan (review.Compared.Merge, review.Plan). It returns the picks only when the person
// confirmed; ErrAborted on Ctrl-C/Esc or when they decline.
func RunCompare(c *review.Compared, in io.Reader, out io.Writer, opts Options) ([]review.Pick, error) {
	if c == nil || len(c.Paths) == 0 {
		return []review.Pick{}, nil
	}
	r, done := newReviewer(c.Sets[0], in, out, opts)
	defer done()
	picks := make([]review.Pick, 0, len(c.Paths))
	for k, cp := range c.Paths {
		p, err := r.pickPath(c, cp, k, len(c.Paths))
		if err != nil {
			return nil, err
		}
		picks = append(picks, p)
	}
	ok, err := r.confirmPicks(c, picks)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrAborted
	}
	return picks, nil
}

// variantLabel names a variant: "A: try1, try2 · M +1 −1".
func variantLabel(c *review.Compared, cp *review.ComparedPath, v int) string {
	var names []string
	for _, i := range cp.Variants[v] {
		names = append(names, termsafe.String(c.Names[i]))
	}
	it := cp.Items[cp.Variants[v][0]]
	s := fmt.Sprintf("%c: %s · %s", 'A'+rune(v%26), strings.Join(names, ", "), label(it))
	if it.Refused != "" {
		s += " · refused"
	}
	return s
}

// verdictLine says who changed the path: "changed by try1 only", "try1 and try2 agree",
// "2 versions; try3 leaves it".
func verdictLine(c *review.Compared, cp *review.ComparedPath) string {
	var changed, left []string
	for i, it := range cp.Items {
		if it == nil {
			left = append(left, termsafe.String(c.Names[i]))
		} else {
			changed = append(changed, termsafe.String(c.Names[i]))
		}
	}
	var s string
	switch {
	case len(changed) == 1:
		s = "changed by " + changed[0] + " only"
	case len(cp.Variants) == 1:
		s = strings.Join(changed, ", ") + " agree"
	default:
		s = fmt.Sprintf("%d versions", len(cp.Variants))
	}
	if len(left) > 0 && len(changed) > 1 {
		s += "; " + strings.Join(left, ", ") + " leave it"
	}
	return s
}

// pickPath asks what to take of one path.
func (r *reviewer) pickPath(c *review.Compared, cp *review.ComparedPath, k, total int) (review.Pick, error) {
	first := 0
	if cp.Items[cp.Variants[0][0]].Refused != "" {
		first = pickLeave
	}
	choice := first
	for {
		var opts []huh.Option[int]
		for v := range cp.Variants {
			it := cp.Items[cp.Variants[v][0]]
			if it.Refused != "" {
				continue
			}
			l := "take " + variantLabel(c, cp, v)
			if it.Conflict {
				l += " (overwrites the host's change)"
			}
			if !r.accessible {
				l = truncate(l, r.width()-8)
			}
			opts = append(opts, huh.NewOption(l, v))
		}
		if cp.Mergeable() {
			opts = append(opts, huh.NewOption("choose hunks of each session", pickHunks))
		}
		opts = append(opts, huh.NewOption("take none (every session's change stays pending)", pickLeave))
		opts = append(opts, huh.NewOption("view every version", pickView))
		sel := huh.NewSelect[int]().
			Title("What should the host get?").
			Options(opts...).
			Value(&choice)
		if hint := r.vHint("v: every version, scrollable"); hint != "" {
			sel.Description(hint)
		}
		// Layout: group title 1, select (title, description, options), gap 1, note (title,
		// blank, lines, blank), blank 1, help 1; one line spare. In accessible mode the
		// versions come first, whole, as text.
		note := huh.NewNote().Title("The versions: " + verdictLine(c, cp)).
			Description(strings.Join(r.variantsPreview(c, cp, r.height()-10-len(opts)), "\n"))
		fields := []huh.Field{sel, note}
		if r.accessible {
			fields = []huh.Field{note, sel}
		}
		f := r.form(fmt.Sprintf("[%d/%d] %s · compare", k+1, total, cp.Display), fields...)
		if err := r.runForm(f, func() *doc { return r.variantsDoc(c, cp) }); err != nil {
			return review.Pick{}, err
		}
		switch choice {
		case pickView:
			if err := r.page(*r.variantsDoc(c, cp)); err != nil {
				return review.Pick{}, err
			}
			choice = first
			continue
		case pickLeave:
			return review.Pick{Path: cp.Path, Session: -1}, nil
		case pickHunks:
			p, err := r.pickHunks(c, cp)
			if errors.Is(err, errChooseAgain) {
				choice = pickHunks
				continue
			}
			return p, err
		}
		return review.Pick{Path: cp.Path, Session: cp.Variants[choice][0]}, nil
	}
}

// errChooseAgain sends the person back to a path's choice.
var errChooseAgain = errors.New("choose again")

// pickHunks asks, for every session's edit of the path, which of its hunks to take, and,
// with "s" as in a review (chooseHunks), which lines of a hunk; hunks or lines of several
// sessions that change the same lines are refused, and the person chooses again.
func (r *reviewer) pickHunks(c *review.Compared, cp *review.ComparedPath) (review.Pick, error) {
	p := review.Pick{Path: cp.Path, Session: -1, Hunks: make([][]bool, len(c.Names))}
	for i, it := range cp.Items {
		if it == nil {
			continue
		}
		name := termsafe.String(c.Names[i])
		mask, lines, err := r.chooseHunks(it, func(h int) hunkQuestion {
			return hunkQuestion{group: cp.Display + " · hunks of " + name,
				heading: fmt.Sprintf("%s: hunk %d of %d", name, h+1, len(it.Hunks)),
				title:   fmt.Sprintf("Take hunk %d of %d of %s?", h+1, len(it.Hunks), name),
				yes:     "Take", no: "Leave"}
		})
		if err != nil {
			return review.Pick{}, err
		}
		p.Hunks[i] = mask
		if lines != nil {
			if p.Lines == nil {
				p.Lines = make([][][]bool, len(c.Names))
			}
			p.Lines[i] = lines
		}
	}
	if _, _, err := c.Merge([]review.Pick{p}); err != nil {
		again := true
		f := r.form(cp.Display+" · hunks",
			huh.NewNote().Title("These hunks cannot be taken together").Description(r.noteText([]string{termsafe.String(err.Error())})),
			huh.NewConfirm().Title("Choose again?").Affirmative("Choose again").Negative("Abort").Value(&again))
		if err := r.runForm(f, nil); err != nil {
			return review.Pick{}, err
		}
		if !again {
			return review.Pick{}, ErrAborted
		}
		return review.Pick{}, errChooseAgain
	}
	return p, nil
}

// variantLines renders one variant: a heading and its diff.
func (r *reviewer) variantLines(p *painter, c *review.Compared, cp *review.ComparedPath, v, width int) []string {
	out := p.textLines("── "+variantLabel(c, cp, v), width)
	lines, _ := p.itemDoc(cp.Items[cp.Variants[v][0]], width)
	return append(out, lines...)
}

// variantsDoc is every version of a path, one after another, or side by side on a wide
// terminal.
func (r *reviewer) variantsDoc(c *review.Compared, cp *review.ComparedPath) *doc {
	return &doc{title: cp.Display + " · " + verdictLine(c, cp), render: func(width int) ([]string, int) {
		return r.variantsLines(r.paint, c, cp, width), 0
	}}
}

// variantsPreview is the beginning of variantsDoc for a Note, at most n lines.
func (r *reviewer) variantsPreview(c *review.Compared, cp *review.ComparedPath, n int) []string {
	p := r.paint.forNote()
	lines := r.variantsLines(p, c, cp, r.noteWidth())
	if len(lines) > n && !r.accessible {
		n = max(n, 2)
		more := len(lines) - (n - 1)
		lines = append(lines[:n-1], p.paint([]span{{text: fmt.Sprintf("… %d more lines: press v to see everything", more), meta: true}}))
	}
	return lines
}

// variantsLines lays the versions out: side by side when the width holds them (at most 3),
// else one after another.
func (r *reviewer) variantsLines(p *painter, c *review.Compared, cp *review.ComparedPath, width int) []string {
	n := len(cp.Variants)
	if n >= 2 && n <= 3 && width >= sideBySideFrom && !r.accessible {
		const gap = 3
		colW := (width - gap*(n-1)) / n
		cols := make([][]string, n)
		rows := 0
		for v := range cp.Variants {
			cols[v] = r.variantLines(p, c, cp, v, colW)
			rows = max(rows, len(cols[v]))
		}
		sep := p.paint([]span{{text: " │ ", meta: true}})
		out := make([]string, rows)
		for row := range rows {
			var parts []string
			for v := range cols {
				cell := ""
				if row < len(cols[v]) {
					cell = ansi.Truncate(cols[v][row], colW, "")
				}
				if v < n-1 {
					cell += strings.Repeat(" ", max(0, colW-lipgloss.Width(cell)))
				}
				parts = append(parts, cell)
			}
			out[row] = strings.Join(parts, sep)
		}
		return append(out, r.unchangedLines(p, c, cp)...)
	}
	var out []string
	for v := range cp.Variants {
		if v > 0 {
			out = append(out, "")
		}
		out = append(out, r.variantLines(p, c, cp, v, width)...)
	}
	return append(out, r.unchangedLines(p, c, cp)...)
}

// unchangedLines name the sessions that left the path unchanged.
func (r *reviewer) unchangedLines(p *painter, c *review.Compared, cp *review.ComparedPath) []string {
	var out []string
	for i, it := range cp.Items {
		if it == nil {
			out = append(out, "", p.paint([]span{{text: "── " + termsafe.String(c.Names[i]) + ": unchanged", meta: true}}))
		}
	}
	return out
}

// confirmPicks is the final confirmation: what the picks write, from which session, and what
// stays pending.
func (r *reviewer) confirmPicks(c *review.Compared, picks []review.Pick) (bool, error) {
	cs, ds, err := c.Merge(picks)
	if err != nil {
		return false, err
	}
	planned, err := review.Plan(cs, ds)
	if err != nil {
		return false, err
	}
	from := map[string]string{}
	byPath := map[string]review.Pick{}
	for _, p := range picks {
		byPath[p.Path] = p
	}
	for _, it := range cs.Items {
		from[it.Display] = c.Source(byPath[it.Path])
	}
	var lines, left []string
	for _, p := range planned {
		if p.Pending {
			continue
		}
		l := termsafe.String(p.Sentence)
		if s := from[p.Path]; s != "" {
			l += " (from " + termsafe.String(s) + ")"
		}
		lines = append(lines, l)
	}
	taken := map[string]bool{}
	for _, it := range cs.Items {
		taken[it.Path] = true
	}
	for _, cp := range c.Paths {
		if !taken[cp.Path] {
			left = append(left, cp.Display)
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "Nothing will be written to the host.")
	}
	if len(left) > 0 {
		lines = append(lines, fmt.Sprintf("left pending in every session (%d): %s", len(left), strings.Join(left, ", ")))
	}
	lines = append(lines, "Applied through session "+termsafe.String(c.Names[0])+": `review --session "+termsafe.String(c.Names[0])+" --undo` undoes it.")
	// How each session's requests used its secrets, weighed with what it changed.
	var notes []string
	for _, l := range r.opts.SessionSecrets {
		notes = append(notes, termsafe.String(l))
	}
	lines = append(notes, lines...)
	r.cs = cs
	all := lines
	lines = r.confirmLines(lines)
	ok := false
	note := huh.NewNote().Title("This is what will be done").Description(r.noteText(lines))
	conf := huh.NewConfirm().Title("Apply these changes?").
		Affirmative("Yes, apply").Negative("No, abort").Value(&ok)
	f := r.form("Confirm: "+termsafe.String(c.Workdir), note, conf)
	err = r.runForm(f, func() *doc {
		return &doc{title: "What will be done", render: func(width int) ([]string, int) {
			var out []string
			for _, l := range all {
				out = append(out, r.paint.textLines(l, width)...)
			}
			return out, 0
		}}
	})
	return ok, err
}
