package runnerproto

import "strings"

// GitGrepArgs is the git command line for a search: extended regular expressions, line
// numbers, no binary files, paths relative to the working directory (which must be req.Dir).
func GitGrepArgs(req *GrepRequest) []string {
	args := []string{"git", "-c", "core.quotePath=false", "grep", "-n", "--no-index", "-I", "-E", "--no-color", "-e", req.Pattern, "--"}
	if req.Include != "" {
		args = append(args, req.Include)
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
