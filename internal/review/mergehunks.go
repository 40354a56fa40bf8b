package review

import (
	"fmt"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Hunks of several sessions' edits of one text file, taken into one file (a compare's pick
// "hunks of each session"): each hunk is split into its runs of changed lines, as positions in
// the base the sessions share; the runs taken are applied to the base in order, and two that
// change the same lines are refused rather than guessed at.

// change is a run of changed lines of a hunk, as positions in the base: the base lines
// [start, start+n) become lines.
type change struct {
	session, hunk int
	start, n      int
	lines         []string
}

// changesOf splits a hunk into its runs of changed lines.
func changesOf(h udiff.Hunk, session, hunk int) []change {
	var out []change
	old := h.OldStart - 1
	if h.OldLines == 0 {
		old = h.OldStart
	}
	var cur *change
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for _, l := range h.Lines {
		switch l.Op {
		case udiff.Equal:
			flush()
			old++
		case udiff.Delete:
			if cur == nil {
				cur = &change{session: session, hunk: hunk, start: old}
			}
			cur.n++
			old++
		case udiff.Insert:
			if cur == nil {
				cur = &change{session: session, hunk: hunk, start: old}
			}
			cur.lines = append(cur.lines, l.Text)
		}
	}
	flush()
	return out
}

// mergeHunks is the base of a path with the hunks taken of each session: an item of the first
// session that changed it (a copy, whose content is the merge), and its decision. Only one
// session's hunks taken is that session's own partial accept.
func (c *Compared) mergeHunks(cp *ComparedPath, hunks [][]bool) (*Item, Decision, error) {
	if len(hunks) != len(c.Names) {
		return nil, Decision{}, fmt.Errorf("%s: hunk choices for %d sessions, there are %d", cp.Display, len(hunks), len(c.Names))
	}
	if !cp.Mergeable() {
		return nil, Decision{}, fmt.Errorf("%s: hunks are taken of several sessions only for edits of a text file the host has not changed", cp.Display)
	}
	var from []int
	var base string
	for i, hs := range hunks {
		it := cp.Items[i]
		if hs == nil {
			continue
		}
		if it == nil {
			return nil, Decision{}, fmt.Errorf("%s: session %s did not change it", cp.Display, c.Names[i])
		}
		if len(hs) != len(it.Hunks) {
			return nil, Decision{}, fmt.Errorf("%s: %d hunk choices for session %s's %d hunks", cp.Display, len(hs), c.Names[i], len(it.Hunks))
		}
		if len(from) > 0 && it.BaseText != base {
			return nil, Decision{}, fmt.Errorf("%s: the sessions' edits start from different texts", cp.Display)
		}
		base = it.BaseText
		for _, ok := range hs {
			if ok {
				from = append(from, i)
				break
			}
		}
	}
	switch len(from) {
	case 0:
		return nil, Decision{}, nil
	case 1:
		i := from[0]
		it := c.taken(cp.Items[i], i)
		return it, Decision{Path: it.Path, Action: Accept, Hunks: append([]bool(nil), hunks[i]...)}, nil
	}
	var chs []change
	for _, i := range from {
		for k, h := range cp.Items[i].Hunks {
			if hunks[i][k] {
				chs = append(chs, changesOf(h, i, k)...)
			}
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
			return nil, Decision{}, fmt.Errorf("%s: hunk %d of %s and hunk %d of %s change the same lines: take one of them", cp.Display, a.hunk+1, c.Names[a.session], b.hunk+1, c.Names[b.session])
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
		n := 0
		for _, ok := range hunks[i] {
			if ok {
				n++
			}
		}
		parts = append(parts, fmt.Sprintf("%d of %d hunks of %s", n, len(cp.Items[i].Hunks), c.Names[i]))
	}
	it.Description = "merged: " + strings.Join(parts, ", ")
	if text == it.BaseText {
		return nil, Decision{}, nil
	}
	return &it, Decision{Path: it.Path, Action: Accept}, nil
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
