package agentconfig

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// diffContext is how many unchanged lines a hunk shows around a change.
const diffContext = 3

// Diff renders the change as a unified diff ("" if the file would not change). A file to be
// created is diffed against /dev/null.
func (c Change) Diff() string {
	if !c.Changed() {
		return ""
	}
	from := c.Path
	if c.Creates() {
		from = "/dev/null"
	}
	ops := diffLines(string(c.Before), string(c.After))
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", from, c.Path)
	writeHunks(&b, ops)
	return b.String()
}

type lineOp struct {
	kind byte   // ' ', '-' or '+'
	line string // with its newline, if it has one
}

// diffLines compares a and b line by line.
func diffLines(a, b string) []lineOp {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var ops []lineOp
	for _, d := range diffs {
		kind := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			kind = '-'
		case diffmatchpatch.DiffInsert:
			kind = '+'
		}
		for _, l := range strings.SplitAfter(d.Text, "\n") {
			if l != "" {
				ops = append(ops, lineOp{kind, l})
			}
		}
	}
	return ops
}

// writeHunks writes ops as unified-diff hunks with diffContext lines of context.
func writeHunks(b *strings.Builder, ops []lineOp) {
	// oldAt[i] and newAt[i] count the old and new lines before ops[i].
	oldAt, newAt := make([]int, len(ops)+1), make([]int, len(ops)+1)
	for i, op := range ops {
		oldAt[i+1], newAt[i+1] = oldAt[i], newAt[i]
		if op.kind != '+' {
			oldAt[i+1]++
		}
		if op.kind != '-' {
			newAt[i+1]++
		}
	}
	i := 0
	for {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			return
		}
		start := max(i-diffContext, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := 0
			for end+run < len(ops) && ops[end+run].kind == ' ' {
				run++
			}
			if end+run == len(ops) || run > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end += run
		}
		fmt.Fprintf(b, "@@ -%s +%s @@\n",
			hunkRange(oldAt[start], oldAt[end]-oldAt[start]),
			hunkRange(newAt[start], newAt[end]-newAt[start]))
		for _, op := range ops[start:end] {
			b.WriteByte(op.kind)
			b.WriteString(op.line)
			if !strings.HasSuffix(op.line, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
}

// hunkRange writes a hunk's line range: its first line (1-based) and length; an empty range
// names the line before it.
func hunkRange(before, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", before)
	}
	if n == 1 {
		return fmt.Sprintf("%d", before+1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}
