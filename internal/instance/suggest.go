package instance

import (
	"fmt"
	"slices"
	"strings"
)

// NotExistError is the error for a missing instance (errors.Is(err, ErrNotExist)): its words
// name the closest existing instance when one is close (a typo), the instances there are, and
// the command that creates one; Near is that closest name ("" when none is close).
type NotExistError struct {
	Name, Near string
	msg        string
}

func (e *NotExistError) Error() string { return e.msg }
func (e *NotExistError) Unwrap() error { return ErrNotExist }

// notExist is the error for a missing instance.
func notExist(name string, names []string) error {
	create := fmt.Sprintf("create it with `limactl start --mount-none --name=%s template:default`", name)
	e := &NotExistError{Name: name}
	switch near := closest(name, names); {
	case len(names) == 0:
		e.msg = fmt.Sprintf("%v %q (there are no instances yet): %s", ErrNotExist, name, create)
	case near != "":
		e.Near = near
		e.msg = fmt.Sprintf("%v %q: did you mean %q? (instances: %s); or %s", ErrNotExist, name, near, strings.Join(names, ", "), create)
	default:
		e.msg = fmt.Sprintf("%v %q (instances: %s): %s", ErrNotExist, name, strings.Join(names, ", "), create)
	}
	return e
}

// closest is the name at the smallest edit distance from name, if that distance is small for
// its length (at most 1 for names of up to 4 characters, 2 beyond), or one name has name as
// its prefix; "" otherwise.
func closest(name string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		d := editDistance(strings.ToLower(name), strings.ToLower(n))
		if bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	limit := 2
	if len([]rune(name)) <= 4 {
		limit = 1
	}
	if bestD >= 0 && bestD <= limit {
		return best
	}
	var prefixed []string
	for _, n := range names {
		if strings.HasPrefix(n, name) {
			prefixed = append(prefixed, n)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// editDistance is the Damerau-Levenshtein distance (with adjacent transpositions) of a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = slices.Min([]int{d[i-1][j] + 1, d[i][j-1] + 1, d[i-1][j-1] + cost})
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
