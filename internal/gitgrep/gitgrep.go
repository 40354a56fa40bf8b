// Package gitgrep is how the runner, and the host without the runner, search with git: the
// command line and the reading of its errors, the same on both sides.
package gitgrep

import "strings"

// Args is the git command line for a search: extended regular expressions, line numbers, no
// binary files, paths relative to the working directory (the directory searched); include,
// when not empty, is a pathspec that limits the files.
func Args(pattern, include string) []string {
	args := []string{"git", "-c", "core.quotePath=false", "grep", "-n", "--no-index", "-I", "-E", "--no-color", "-e", pattern, "--"}
	if include != "" {
		args = append(args, include)
	}
	return args
}

// IsBadPatternMessage says whether git's error message is about the regular expression.
func IsBadPatternMessage(msg string) bool {
	for _, s := range []string{"command line,", "regcomp", "Invalid", "Unmatched", "Trailing backslash"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
