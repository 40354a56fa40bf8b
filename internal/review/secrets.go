package review

import "github.com/limactl-mcp/limactl-mcp/internal/termsafe"

// SecretsLines are what a review shows of how the session used its secrets, one line per
// line of uses (secrets.UsesSummary: "ANTHROPIC_API_KEY used 212 times, only with
// api.anthropic.com", or "unknown (…)" for a damaged log): "Secrets: ANTHROPIC_API_KEY used
// 212 times, only with api.anthropic.com."; then one per host whose HTTPS requests the network
// rules ruled on (secrets.Summaries): "Network rules: github.com: 3 HTTPS requests
// allowed by the network rules, 1 refused (…)." Made safe for a terminal; none for none. The
// text summary and the TUI's list of files both show these.
func SecretsLines(uses, requests []string) []string {
	var lines []string
	for _, u := range uses {
		lines = append(lines, termsafe.String("Secrets: "+u+"."))
	}
	for _, r := range requests {
		lines = append(lines, termsafe.String("Network rules: "+r+"."))
	}
	return lines
}
