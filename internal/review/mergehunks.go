package review

import (
	"fmt"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Hunks of several sessions' edits of one text file, or lines within them, taken into one
// file (a compare's pick "hunks of each session"): each hunk is split into its runs of the
// changed lines taken (as a review takes lines, lines.go), as positions in the base the
// sessions share; the runs are applied to the base in order, and two that change the same
// lines are refused rather than guessed at.

// change is a run of changed lines of a hunk, as positions in the base: the base lines
// [start, start+n) become lines. part says only some lines of the hunk were taken.
type change struct {
	session, hunk int
	part          bool
	start, n      int
	lines         []string
}

// changesOf splits a hunk into its runs of changed lines, of the lines taken (chosen, one
// mark per line, as hunkChosen says them): a removed line not taken is kept, as a context
// line is, and an added line not taken is left out.
func changesOf(h udiff.Hunk, chosen []bool, session, hunk int) []change {
	var out []change
	old := h.OldStart - 1
	if h.OldLines == 0 {
		old = h.OldStart
	}
	part := false
	for j, l := range h.Lines {
		part = part || l.Op != udiff.Equal && !chosen[j]
	}
	var cur *change
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for j, l := range h.Lines {
		switch {
		case l.Op == udiff.Equal, l.Op == udiff.Delete && !chosen[j]:
			flush()
			old++
		case l.Op == udiff.Delete:
			if cur == nil {
				cur = &change{session: session, hunk: hunk, part: part, start: old}
			}
			cur.n++
			old++
		case l.Op == udiff.Insert && chosen[j]:
			if cur == nil {
				cur = &change{session: session, hunk: hunk, part: part, start: old}
			}
			cur.lines = append(cur.lines, l.Text)
		}
	}
	flush()
	return out
}

// decision is what p takes of session i's change it, as a review's decision of it says it:
// its hunks, and its lines where they were chosen.
func (p Pick) decision(it *Item, i int) Decision {
	d := Decision{Path: it.Path, Action: Accept}
	if i < len(p.Hunks) {
		d.Hunks = p.Hunks[i]
	}
	if i < len(p.Lines) {
		d.Lines = p.Lines[i]
	}
	return d
}

// takes says whether p takes a changed line of session i's change it.
func (p Pick) takes(it *Item, i int) bool {
	d := p.decision(it, i)
	if d.Hunks == nil && d.Lines == nil {
		return false // nothing chosen of this session
	}
	n, _, _, _ := choiceCount(it, d)
	return n > 0
}

// mergeHunks is the base of a path with the hunks (and lines) p takes of each session: an
// item of the first session that changed it (a copy, whose content is the merge), and its
// decision. Hunks or lines taken of one session only are that session's own partial accept.
func (c *Compared) mergeHunks(cp *ComparedPath, p Pick) (*Item, Decision, error) {
	hunks := p.Hunks
	if len(hunks) != len(c.Names) {
		return nil, Decision{}, fmt.Errorf("%s: hunk choices for %d sessions, there are %d", cp.Display, len(hunks), len(c.Names))
	}
	if p.Lines != nil && len(p.Lines) != len(c.Names) {
		return nil, Decision{}, fmt.Errorf("%s: line choices for %d sessions, there are %d", cp.Display, len(p.Lines), len(c.Names))
	}
	if !cp.Mergeable() {
		return nil, Decision{}, fmt.Errorf("%s: hunks are taken of several sessions only for edits of a text file the host has not changed", cp.Display)
	}
	var from []int
	var base string
	for i, hs := range hunks {
		it := cp.Items[i]
		if hs == nil {
			if p.Lines != nil && p.Lines[i] != nil {
				return nil, Decision{}, fmt.Errorf("%s: lines of session %s chosen without its hunks", cp.Display, c.Names[i])
			}
			continue
		}
		if it == nil {
			return nil, Decision{}, fmt.Errorf("%s: session %s did not change it", cp.Display, c.Names[i])
		}
		if len(hs) != len(it.Hunks) {
			return nil, Decision{}, fmt.Errorf("%s: %d hunk choices for session %s's %d hunks", cp.Display, len(hs), c.Names[i], len(it.Hunks))
		}
		if err := checkChoice(it, p.decision(it, i)); err != nil {
			return nil, Decision{}, fmt.Errorf("session %s: %w", c.Names[i], err)
		}
		if len(from) > 0 && it.BaseText != base {
			return nil, Decision{}, fmt.Errorf("%s: the sessions' edits start from different texts", cp.Display)
		}
		base = it.BaseText
		if p.takes(it, i) {
			from = append(from, i)
		}
	}
	switch len(from) {
	case 0:
		return nil, Decision{}, nil
	case 1:
		i := from[0]
		it := c.taken(cp.Items[i], i)
		d := p.decision(it, i)
		d.Hunks = append([]bool(nil), d.Hunks...)
		if d.Lines != nil {
			d.Lines = append([][]bool(nil), d.Lines...)
		}
		return it, d, nil
	}
	var chs []change
	for _, i := range from {
		it := cp.Items[i]
		d := p.decision(it, i)
		for k, h := range it.Hunks {
			chs = append(chs, changesOf(h, hunkChosen(it, d, k), i, k)...)
		}
	}
	sort.SliceStable(chs, func(a, b int) bool {
		if chs[a].start != chs[b].start {
			return chs[a].start < chs[b].start
		}
		return chs[a].n < chs[b].n // an insertion before a removal at the same line
	})
	// The same change taken of two sessions is one change.
	var uniq []change
	for _, ch := range chs {
		if n := len(uniq); n > 0 && sameChange(uniq[n-1], ch) {
			continue
		}
		uniq = append(uniq, ch)
	}
	for k := 1; k < len(uniq); k++ {
		a, b := uniq[k-1], uniq[k]
		if a.start+a.n > b.start || a.start == b.start && a.n == 0 && b.n == 0 {
			return nil, Decision{}, fmt.Errorf("%s: %s and %s change the same lines (at line %d of the baseline): take one of them", cp.Display, c.changeName(a), c.changeName(b), b.start+1)
		}
	}
	lines := splitKeep(base)
	var b strings.Builder
	write := func(s string) error {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			return fmt.Errorf("%s: %w", cp.Display, errNoNewline)
		}
		b.WriteString(s)
		return nil
	}
	next := 0
	for _, ch := range uniq {
		for ; next < ch.start && next < len(lines); next++ {
			if err := write(lines[next]); err != nil {
				return nil, Decision{}, err
			}
		}
		for _, l := range ch.lines {
			if err := write(l); err != nil {
				return nil, Decision{}, err
			}
		}
		next = ch.start + ch.n
	}
	for ; next < len(lines); next++ {
		if err := write(lines[next]); err != nil {
			return nil, Decision{}, err
		}
	}
	text := b.String()
	// The item of the first session taken of, with the merge as its content: written from
	// memory, and the baseline left as it is (no guest copy holds the merge).
	first := cp.Items[from[0]]
	it := *first
	it.keepBase = true
	if from[0] < len(c.sessions) {
		it.src = c.sessions[from[0]]
	}
	g := *first.Guest
	g.Hash, g.Size, g.MTime = tree.Hash([]byte(text)), int64(len(text)), 0
	it.Guest, it.GuestText = &g, text
	d := udiff.Diff(it.BaseText, text)
	it.Hunks, it.Added, it.Removed = d.Hunks, 0, 0
	for _, h := range it.Hunks {
		for _, l := range h.Lines {
			switch l.Op {
			case udiff.Insert:
				it.Added++
			case udiff.Delete:
				it.Removed++
			}
		}
	}
	var parts []string
	for _, i := range from {
		n, total, unit, _ := choiceCount(cp.Items[i], p.decision(cp.Items[i], i))
		parts = append(parts, fmt.Sprintf("%d of %d %s of %s", n, total, unit, c.Names[i]))
	}
	it.Description = "merged: " + strings.Join(parts, ", ")
	if text == it.BaseText {
		return nil, Decision{}, nil
	}
	return &it, Decision{Path: it.Path, Action: Accept}, nil
}

// changeName names the hunk a change is of: "hunk 2 of try1", "the lines chosen of hunk 2
// of try1".
func (c *Compared) changeName(ch change) string {
	s := fmt.Sprintf("hunk %d of %s", ch.hunk+1, c.Names[ch.session])
	if ch.part {
		s = "the lines chosen of " + s
	}
	return s
}

func sameChange(a, b change) bool {
	if a.start != b.start || a.n != b.n || len(a.lines) != len(b.lines) {
		return false
	}
	for i := range a.lines {
		if a.lines[i] != b.lines[i] {
			return false
		}
	}
	return true
}
