package review

import "github.com/limactl-mcp/limactl-mcp/internal/termsafe"

// SecretsLines are what a review shows of how the session used its secrets, one line per
// line of uses (secrets.UsesSummary: "ANTHROPIC_API_KEY used 212 times, only with
// api.anthropic.com", or "unknown (…)" for a damaged log): "Secrets: ANTHROPIC_API_KEY used
// 212 times, only with api.anthropic.com." Made safe for a terminal; none for none. The text
// summary and the TUI's list of files both show these.
func SecretsLines(uses []string) []string {
	var lines []string
	for _, u := range uses {
		lines = append(lines, termsafe.String("Secrets: "+u+"."))
	}
	return lines
}
