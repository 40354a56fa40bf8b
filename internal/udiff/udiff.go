// Package udiff computes line-level unified diffs (with github.com/sergi/go-diff) as hunks that
// can be shown, selected one by one, and applied.
package udiff

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Op is what a diff line does.
type Op byte

// Ops.
const (
	Equal  Op = ' '
	Delete Op = '-'
	Insert Op = '+'
)

// Line is one line of a hunk, with its newline (the last line of a file may lack one).
type Line struct {
	Op   Op
	Text string
}

// Hunk is a run of changes with context. Starts are 1-based line numbers (0 for an empty side).
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	Lines              []Line
}

// Context is the number of unchanged lines around each change.
const Context = 3

// splitLines splits text into lines that keep their "\n".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineOps diffs old and new line by line.
func lineOps(old, new string) []Line {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	a, b, lines := dmp.DiffLinesToRunes(old, new)
	diffs := dmp.DiffMainRunes(a, b, false)
	var out []Line
	for _, d := range diffs {
		op := Equal
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = Delete
		case diffmatchpatch.DiffInsert:
			op = Insert
		}
		for _, r := range d.Text {
			out = append(out, Line{Op: op, Text: lines[r]})
		}
	}
	return out
}

// Hunks returns the hunks that turn old into new.
func Hunks(old, new string) []Hunk {
	if old == new {
		return nil
	}
	ops := lineOps(old, new)
	var hunks []Hunk
	oldNo, newNo := 1, 1
	i := 0
	for i < len(ops) {
		// Find the next change.
		j := i
		for j < len(ops) && ops[j].Op == Equal {
			j++
		}
		if j == len(ops) {
			break
		}
		// Lines i..j are equal; start the hunk Context lines before j.
		start := max(i, j-Context)
		oldNo += start - i
		newNo += start - i
		h := Hunk{OldStart: oldNo, NewStart: newNo}
		k := start
		for k < len(ops) {
			if ops[k].Op == Equal {
				// Look ahead: does another change come within 2*Context equal lines?
				e := k
				for e < len(ops) && ops[e].Op == Equal {
					e++
				}
				if e == len(ops) || e-k > 2*Context {
					end := min(e, k+Context)
					for ; k < end; k++ {
						h.Lines = append(h.Lines, ops[k])
					}
					break
				}
				for ; k < e; k++ {
					h.Lines = append(h.Lines, ops[k])
				}
				continue
			}
			h.Lines = append(h.Lines, ops[k])
			k++
		}
		for _, l := range h.Lines {
			if l.Op != Insert {
				h.OldLines++
			}
			if l.Op != Delete {
				h.NewLines++
			}
		}
		oldNo += h.OldLines
		newNo += h.NewLines
		if h.OldLines == 0 {
			h.OldStart--
		}
		if h.NewLines == 0 {
			h.NewStart--
		}
		hunks = append(hunks, h)
		i = k
	}
	return hunks
}

// Header is the hunk's "@@ -a,b +c,d @@" line.
func (h Hunk) Header() string {
	return fmt.Sprintf("@@ -%s +%s @@", rng(h.OldStart, h.OldLines), rng(h.NewStart, h.NewLines))
}

func rng(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// Unified renders a complete unified diff with "a/" and "b/" names, as git apply expects.
// A nil side stands for a missing file (/dev/null).
func Unified(oldName, newName string, old, new *string) string {
	var o, n string
	if old != nil {
		o = *old
	}
	if new != nil {
		n = *new
	}
	hunks := Hunks(o, n)
	if len(hunks) == 0 {
		return ""
	}
	var b strings.Builder
	from, to := "a/"+oldName, "b/"+newName
	if old == nil {
		from = "/dev/null"
	}
	if new == nil {
		to = "/dev/null"
	}
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", from, to)
	for _, h := range hunks {
		b.WriteString(h.Render())
	}
	return b.String()
}

// Render writes the hunk in unified format.
func (h Hunk) Render() string {
	var b strings.Builder
	b.WriteString(h.Header() + "\n")
	for _, l := range h.Lines {
		b.WriteByte(byte(l.Op))
		b.WriteString(l.Text)
		if !strings.HasSuffix(l.Text, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	return b.String()
}

// Apply applies the selected hunks (by index) of Hunks(old, new) to old and returns the
// result: with every hunk selected it is new, with none it is old.
func Apply(old string, hunks []Hunk, selected func(i int) bool) string {
	lines := splitLines(old)
	var b strings.Builder
	next := 0 // next old line (0-based) to copy
	for i, h := range hunks {
		start := h.OldStart - 1
		if h.OldLines == 0 {
			start = h.OldStart // insertion after line OldStart
		}
		for ; next < start && next < len(lines); next++ {
			b.WriteString(lines[next])
		}
		for _, l := range h.Lines {
			switch {
			case l.Op == Equal:
				b.WriteString(l.Text)
				next++
			case l.Op == Delete && !selected(i), l.Op == Insert && selected(i):
				b.WriteString(l.Text)
				if l.Op == Delete {
					next++
				}
			case l.Op == Delete:
				next++
			}
		}
	}
	for ; next < len(lines); next++ {
		b.WriteString(lines[next])
	}
	return b.String()
}
