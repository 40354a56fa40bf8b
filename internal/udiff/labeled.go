package udiff

import "strings"

// Labeled renders the unified diff that turns old into new under the given file labels, used as
// they are ("--- oldLabel", "+++ newLabel": no "a/" or "b/" added, and a missing side is for the
// caller to name, e.g. /dev/null). Unlike Unified it writes the two header lines even when old
// equals new, where no hunk follows: whether there is a change to show is the caller's to say
// (creating an empty file is one).
func Labeled(oldLabel, newLabel, old, new string) string {
	var b strings.Builder
	b.WriteString("--- " + oldLabel + "\n+++ " + newLabel + "\n")
	for _, h := range Hunks(old, new) {
		b.WriteString(h.Render())
	}
	return b.String()
}
