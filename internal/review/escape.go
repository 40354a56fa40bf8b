package review

import "github.com/limactl-mcp/limactl-mcp/internal/termsafe"

// Sanitize returns s with every character a terminal would not show as itself escaped (for
// plain-text output of messages that may quote guest names). It is termsafe.String, named
// here for the commands that print a review.
func Sanitize(s string) string { return termsafe.String(s) }
