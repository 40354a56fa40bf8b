package secrets

import (
	"slices"
	"testing"
)

func TestLog(t *testing.T) {
	l := &Log{Max: 3}
	for i := 0; i < 5; i++ {
		l.Record(Use{Host: "api.anthropic.com:443", Secrets: []string{"ANTHROPIC_API_KEY"}, Status: 200})
	}
	l.Record(Use{Host: "github.com:443", Secrets: []string{"GITHUB_TOKEN"}})
	l.Record(Use{Host: "api.github.com:443", Secrets: []string{"GITHUB_TOKEN"}})
	l.Record(Use{Host: "github.com:443"})
	uses, dropped := l.Uses()
	if len(uses) != 3 || dropped != 5 {
		t.Errorf("kept %d, dropped %d", len(uses), dropped)
	}
	want := []string{
		"ANTHROPIC_API_KEY used 5 times, only with api.anthropic.com",
		"GITHUB_TOKEN used 2 times, with api.github.com, github.com",
	}
	if got := l.Summary(); !slices.Equal(got, want) {
		t.Errorf("summary %q, want %q", got, want)
	}
}
