// Package words puts counts and times into plain English for the messages people read: "1
// change", "3 changes", "20 seconds ago", never "change(s)" or "8m0s".
package words

import (
	"fmt"
	"time"
)

// Count is n and the noun, in the plural unless n is 1 ("1 file", "0 files"). plural is the
// noun's plural when adding "s" is wrong ("directories").
func Count(n int, noun string, plural ...string) string {
	if n == 1 {
		return "1 " + noun
	}
	p := noun + "s"
	if len(plural) > 0 {
		p = plural[0]
	}
	return fmt.Sprintf("%d %s", n, p)
}

// Ago says how long ago something happened, rounded down to the largest whole unit ("just now",
// "20 seconds ago", "1 minute ago", "3 hours ago", "2 days ago").
func Ago(d time.Duration) string {
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return Count(int(d/time.Second), "second") + " ago"
	case d < time.Hour:
		return Count(int(d/time.Minute), "minute") + " ago"
	case d < 48*time.Hour:
		return Count(int(d/time.Hour), "hour") + " ago"
	}
	return Count(int(d/(24*time.Hour)), "day") + " ago"
}
