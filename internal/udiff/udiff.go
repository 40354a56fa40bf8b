// Package udiff computes line-level unified diffs (with github.com/sergi/go-diff) as hunks that
// can be shown, selected one by one, and applied, and writes the rest of what a change is told
// with: the parts of a git patch around the hunks, and, for a path with no text diff, what its
// entry is in words (Describe). It is host-side: the guest runner never links it.
package udiff

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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

// Budget bounds the time one diff may take. Past it (two unrelated texts of tens of thousands
// of lines take time quadratic in lines) the diff is a whole-file replacement, said as such.
const Budget = 2 * time.Second

// maxDistinctLines is how many distinct lines the line encoding can name: one rune each, valid
// code points only (go-diff turns runes back into strings, where a surrogate would become
// U+FFFD; its own line encoding overflows at 55,296 distinct lines and panics).
const maxDistinctLines = utf8.MaxRune + 1 - surrogates

const (
	surrogateStart = 0xD800
	surrogates     = 0x800
)

func indexRune(i int) rune {
	if i >= surrogateStart {
		i += surrogates
	}
	return rune(i)
}

func runeIndex(r rune) int {
	if r >= surrogateStart+surrogates {
		r -= surrogates
	}
	return int(r)
}

// encodeLines maps each line to a rune naming it; false when there are too many distinct lines.
func encodeLines(a, b []string) ([]rune, []rune, []string, bool) {
	ids := map[string]int{}
	var lines []string
	enc := func(ls []string) ([]rune, bool) {
		out := make([]rune, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				if len(lines) >= maxDistinctLines {
					return nil, false
				}
				id = len(lines)
				ids[l] = id
				lines = append(lines, l)
			}
			out[i] = indexRune(id)
		}
		return out, true
	}
	ra, ok := enc(a)
	if !ok {
		return nil, nil, nil, false
	}
	rb, ok := enc(b)
	return ra, rb, lines, ok
}

// lineOps diffs old and new line by line; whole says why it is a whole-file replacement
// instead ("" when it is a real line diff).
func lineOps(old, new string) (ops []Line, whole string) {
	a, b := splitLines(old), splitLines(new)
	ra, rb, lines, ok := encodeLines(a, b)
	if !ok {
		return replaceAll(a, b), fmt.Sprintf("more than %d distinct lines", maxDistinctLines)
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = Budget
	start := time.Now()
	diffs := dmp.DiffMainRunes(ra, rb, false)
	if time.Since(start) >= Budget {
		// go-diff gave up on part of it: its result is still correct, but not a useful diff.
		return replaceAll(a, b), fmt.Sprintf("too different to diff line by line within %s", Budget)
	}
	for _, d := range diffs {
		op := Equal
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = Delete
		case diffmatchpatch.DiffInsert:
			op = Insert
		}
		for _, r := range d.Text {
			ops = append(ops, Line{Op: op, Text: lines[runeIndex(r)]})
		}
	}
	return ops, ""
}

// replaceAll is the whole-file replacement of a by b.
func replaceAll(a, b []string) []Line {
	ops := make([]Line, 0, len(a)+len(b))
	for _, l := range a {
		ops = append(ops, Line{Op: Delete, Text: l})
	}
	for _, l := range b {
		ops = append(ops, Line{Op: Insert, Text: l})
	}
	return ops
}

// Result is a diff of two texts.
type Result struct {
	Hunks []Hunk
	// WholeFile says why the diff is a whole-file replacement (deleting every old line and
	// inserting every new one) rather than a line diff: "" for a line diff.
	WholeFile string
}

// Hunks returns the hunks that turn old into new.
func Hunks(old, new string) []Hunk { return Diff(old, new).Hunks }

// Diff returns the hunks that turn old into new, within Budget. Whatever the input,
// Apply(old, hunks, all) is new and Apply(old, hunks, none) is old.
func Diff(old, new string) Result {
	if old == new {
		return Result{}
	}
	ops, whole := lineOps(old, new)
	return Result{Hunks: hunksOf(ops), WholeFile: whole}
}

// hunksOf groups line operations into hunks with Context lines around each change.
func hunksOf(ops []Line) []Hunk {
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
	from, to := GitQuote("a/"+oldName), GitQuote("b/"+newName)
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
