package review

import (
	"strings"
	"testing"
)

// The lines a review shows of the secrets' uses and of the requests the network rules ruled
// on: one sentence each, each under its own heading, none for none, and a
// hostile line (the host names come from the guest's requests) made safe for a terminal.
func TestSecretsLines(t *testing.T) {
	if got := SecretsLines(nil, nil); got != nil {
		t.Errorf("no uses: %q", got)
	}
	got := SecretsLines([]string{"ANTHROPIC_API_KEY used 2 times, only with api.anthropic.com", "unknown (open secrets-uses.jsonl: path escapes from parent)"},
		[]string{"github.com: 2 HTTPS requests allowed by the network rules, 1 refused (the last: POST /o/r.git/git-receive-pack)"})
	want := []string{"Secrets: ANTHROPIC_API_KEY used 2 times, only with api.anthropic.com.", "Secrets: unknown (open secrets-uses.jsonl: path escapes from parent).",
		"Network rules: github.com: 2 HTTPS requests allowed by the network rules, 1 refused (the last: POST /o/r.git/git-receive-pack)."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, l := range SecretsLines([]string{"X used 1 time, only with evil\x1b]0;pwned\x07\x1b[2J\n.example"}, []string{"a.test: 0 HTTPS requests allowed by the network rules, 1 refused (the last: GET /\x1b[2J\x07)"}) {
		if strings.ContainsAny(l, "\x1b\x07\n") {
			t.Errorf("a control character reached the line: %q", l)
		}
	}
}
