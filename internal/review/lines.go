package review

import (
	"errors"
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// Line-level choice within a hunk (Decision.Lines), as lazygit stages lines: an added line
// chosen is written, one not chosen is left out; a removed line chosen is removed, one not
// chosen is kept. Context lines are always kept. What is left stays pending in the guest.

// hunkChosen says which lines of hunk i d takes: for every line of the hunk, whether its
// change is taken (context lines: true).
func hunkChosen(it *Item, d Decision, i int) []bool {
	h := it.Hunks[i]
	out := make([]bool, len(h.Lines))
	if d.Lines != nil && d.Lines[i] != nil {
		for j, l := range h.Lines {
			out[j] = l.Op == udiff.Equal || d.Lines[i][j]
		}
		return out
	}
	all := d.Hunks == nil || d.Hunks[i]
	for j, l := range h.Lines {
		out[j] = l.Op == udiff.Equal || all
	}
	return out
}

// checkChoice checks the shape of d's choices for it (one per hunk, one per line of a hunk).
func checkChoice(it *Item, d Decision) error {
	if d.Hunks != nil && len(d.Hunks) != len(it.Hunks) {
		return fmt.Errorf("%s: %d hunk choices for %d hunks", it.Display, len(d.Hunks), len(it.Hunks))
	}
	if d.Lines == nil {
		return nil
	}
	if len(d.Lines) != len(it.Hunks) {
		return fmt.Errorf("%s: line choices for %d hunks, it has %d", it.Display, len(d.Lines), len(it.Hunks))
	}
	for i, ls := range d.Lines {
		if ls != nil && len(ls) != len(it.Hunks[i].Lines) {
			return fmt.Errorf("%s: hunk %d: %d line choices for %d lines", it.Display, i+1, len(ls), len(it.Hunks[i].Lines))
		}
	}
	return nil
}

// choiceCount counts what d takes of it: hunks (n of total), or, when lines were chosen,
// changed lines. partial says something is left.
func choiceCount(it *Item, d Decision) (n, total int, unit string, partial bool) {
	if checkChoice(it, d) != nil {
		return 0, 0, "hunks", true // refused by plan before anything is said or done
	}
	if d.Lines == nil {
		if d.Hunks == nil {
			return len(it.Hunks), len(it.Hunks), "hunks", false
		}
		for _, ok := range d.Hunks {
			if ok {
				n++
			}
		}
		return n, len(it.Hunks), "hunks", n < len(it.Hunks)
	}
	for i, h := range it.Hunks {
		chosen := hunkChosen(it, d, i)
		for j, l := range h.Lines {
			if l.Op != udiff.Equal {
				total++
				if chosen[j] {
					n++
				}
			}
		}
	}
	return n, total, "changed lines", n < total
}

// errNoNewline is a choice that would join two lines: a kept last line without a newline
// followed by a chosen added line.
var errNoNewline = errors.New("the old last line has no newline at its end: take its removal with the lines added after it, or neither")

// applyChosen is base with the changes d takes of it's hunks.
func applyChosen(it *Item, d Decision) (string, error) {
	lines := splitKeep(it.BaseText)
	var b strings.Builder
	write := func(s string) error {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			return errNoNewline
		}
		b.WriteString(s)
		return nil
	}
	next := 0 // next base line (0-based) to copy
	for i, h := range it.Hunks {
		start := h.OldStart - 1
		if h.OldLines == 0 {
			start = h.OldStart // insertion after line OldStart
		}
		for ; next < start && next < len(lines); next++ {
			if err := write(lines[next]); err != nil {
				return "", err
			}
		}
		chosen := hunkChosen(it, d, i)
		for j, l := range h.Lines {
			var err error
			switch {
			case l.Op == udiff.Equal:
				err = write(l.Text)
				next++
			case l.Op == udiff.Delete:
				if !chosen[j] {
					err = write(l.Text)
				}
				next++
			case l.Op == udiff.Insert && chosen[j]:
				err = write(l.Text)
			}
			if err != nil {
				return "", fmt.Errorf("%s: hunk %d: %w", it.Display, i+1, err)
			}
		}
	}
	for ; next < len(lines); next++ {
		if err := write(lines[next]); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// splitKeep splits s into lines that keep their "\n".
func splitKeep(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			i = len(s) - 1
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
