// Package shellquote quotes words for a POSIX shell.
package shellquote

import "strings"

// Quote returns s quoted so that a POSIX shell reads it back as exactly one word.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, unsafe) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join quotes each word and joins them with spaces.
func Join(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

// JoinCommand is Join for a command line: leading NAME=VALUE words stay assignments (their
// value quoted), as in `limactl shell INSTANCE NAME=VALUE CMD`.
func JoinCommand(words []string) string {
	q := make([]string, len(words))
	assign := true
	for i, w := range words {
		if name, value, ok := strings.Cut(w, "="); assign && ok && IsName(name) {
			q[i] = name + "=" + Quote(value)
			continue
		}
		assign = false
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

// IsName says whether s is a portable shell variable name: letters, digits and _, not
// starting with a digit.
func IsName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func unsafe(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
}
