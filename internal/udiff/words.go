package udiff

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Word-level (intra-line) differences: which words of a deleted line and of the inserted line
// paired with it changed, with go-diff's primitives (the same rune encoding as lines, one rune
// per distinct token).

// maxLineTokens bounds the tokens of one line that are diffed word by word (a minified file's
// one line of megabytes is shown as a changed line, without word marks).
const maxLineTokens = 4000

// WordTokens splits s into tokens: runs of letters, digits and '_' (a word), runs of white
// space, and every other character alone. Joined, they are s.
func WordTokens(s string) []string {
	var out []string
	class := func(r rune) int {
		switch {
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			return 1
		case unicode.IsSpace(r):
			return 2
		}
		return 0
	}
	start, prev := 0, -1
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := class(r)
		if i > start && (c != prev || c == 0) {
			out = append(out, s[start:i])
			start = i
		}
		prev = c
		i += size
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// TokenDiff says which tokens of a and of b are not common to both (a minimal token diff).
// ok is false when there are too many tokens to diff (nothing is marked then).
func TokenDiff(a, b []string) (changedA, changedB []bool, ok bool) {
	if len(a) > maxLineTokens || len(b) > maxLineTokens {
		return nil, nil, false
	}
	ids := map[string]int{}
	enc := func(ts []string) []rune {
		out := make([]rune, len(ts))
		for i, t := range ts {
			id, seen := ids[t]
			if !seen {
				id = len(ids)
				ids[t] = id
			}
			out[i] = indexRune(id)
		}
		return out
	}
	ra, rb := enc(a), enc(b)
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = Budget
	diffs := dmp.DiffMainRunes(ra, rb, false)
	// Semantic cleanup merges a scatter of one-token equalities into the changes around them,
	// so that "foo(a, b)" → "bar(c, d)" reads as one change, not five.
	diffs = dmp.DiffCleanupSemantic(diffs)
	changedA, changedB = make([]bool, len(a)), make([]bool, len(b))
	i, j := 0, 0
	for _, d := range diffs {
		n := utf8.RuneCountInString(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			i += n
			j += n
		case diffmatchpatch.DiffDelete:
			for k := 0; k < n && i < len(a); k++ {
				changedA[i] = true
				i++
			}
		case diffmatchpatch.DiffInsert:
			for k := 0; k < n && j < len(b); k++ {
				changedB[j] = true
				j++
			}
		}
	}
	return changedA, changedB, true
}

// WhitespaceOnly says whether a and b differ only in white space: its amount between words,
// at the ends, a line end's "\r" (git diff's --ignore-space-change; "a b" and "ab" differ).
func WhitespaceOnly(a, b string) bool {
	return a != b && strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}

// Pair is a deleted line of a hunk and the inserted line that replaced it: the i-th line of
// a run of deletions with the i-th line of the run of insertions right after it.
type Pair struct {
	Del, Ins int // indices into Hunk.Lines
}

// Pairs are the lines of h that replaced one another, as the word-level marks pair them.
func (h Hunk) Pairs() []Pair {
	var out []Pair
	for i := 0; i < len(h.Lines); {
		if h.Lines[i].Op != Delete {
			i++
			continue
		}
		d := i
		for i < len(h.Lines) && h.Lines[i].Op == Delete {
			i++
		}
		ins := i
		for i < len(h.Lines) && h.Lines[i].Op == Insert {
			i++
		}
		for k := 0; k < ins-d && ins+k < i; k++ {
			out = append(out, Pair{Del: d + k, Ins: ins + k})
		}
	}
	return out
}

// WhitespaceOnly says whether every change of h is a line replaced by one that differs from
// it only in white space.
func (h Hunk) WhitespaceOnly() bool {
	paired := map[int]bool{}
	for _, p := range h.Pairs() {
		if !WhitespaceOnly(strings.TrimSuffix(h.Lines[p.Del].Text, "\n"), strings.TrimSuffix(h.Lines[p.Ins].Text, "\n")) {
			return false
		}
		paired[p.Del], paired[p.Ins] = true, true
	}
	for i, l := range h.Lines {
		if l.Op != Equal && !paired[i] {
			return false
		}
	}
	return len(paired) > 0
}
