package netpolicy

import (
	"strings"
	"testing"
)

// The relay's line round-trips (a command with spaces, quotes and a newline in it stays one
// field); a bad command is left out and the line served; a line with more than its three
// fields, no target, empty rules or past the bound is refused.
func TestRelayLine(t *testing.T) {
	for _, l := range []RelayLine{
		{Target: "api.anthropic.com:443"},
		{Target: "github.com:443", Rules: []string{"github.com:ro", "github.com/*/git-upload-pack:POST"}},
		{Target: "github.com:443", Rules: []string{"github.com:ro"}, Command: "git push origin 'a b'\nx\t\"y\""},
	} {
		got, err := ParseRelayLine(l.String())
		if err != nil || got.Target != l.Target || strings.Join(got.Rules, ",") != strings.Join(l.Rules, ",") || got.Command != l.Command {
			t.Errorf("%q: got %+v, %v", l.String(), got, err)
		}
	}
	// A command without rules is not written (a bound host's relay reads no command).
	if s := (RelayLine{Target: "a:443", Command: "curl"}).String(); s != "a:443" {
		t.Errorf("a bound host's line with a command: %q", s)
	}
	for _, s := range []string{"a:443 r not-base64!", "a:443 r " + "_-_-", "a:443 r " + strings.Repeat("QUFB", 100), "a:443 r /w=="} {
		l, err := ParseRelayLine(s)
		if err != nil || l.Command != "" || l.Target != "a:443" {
			t.Errorf("%q: a bad command: %+v, %v (want it left out)", s, l, err)
		}
	}
	for _, s := range []string{"", " r", "a:443 ", "a:443 r c extra", strings.Repeat("x", MaxRelayLine)} {
		if l, err := ParseRelayLine(s); err == nil {
			t.Errorf("%.40q: accepted as %+v", s, l)
		}
	}
}

func FuzzParseRelayLine(f *testing.F) {
	f.Add("github.com:443 github.com:ro Z2l0IHB1c2g")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseRelayLine(s)
		if err != nil {
			return
		}
		if len(l.Command) > MaxEntryCommand || strings.Contains(l.Target, " ") {
			t.Fatalf("%q: %+v", s, l)
		}
		if back, err := ParseRelayLine(l.String()); err != nil || back.Command != l.Command || back.Target != l.Target {
			t.Fatalf("%q: %+v does not round-trip: %+v, %v", s, l, back, err)
		}
	})
}
