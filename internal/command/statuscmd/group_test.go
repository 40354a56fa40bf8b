package statuscmd

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Forks follow their origin (forks of forks, theirs); a fork whose origin is gone stays where
// it was, and says so; nothing is lost or listed twice.
func TestGrouped(t *testing.T) {
	fork := func(id, name, from string) staging.SessionStatus {
		return staging.SessionStatus{ID: id, Session: name, Fork: &staging.ForkOrigin{ID: from, Session: "o"}}
	}
	in := []staging.SessionStatus{
		{ID: "o", Session: ""},
		{ID: "c", Session: "codex"},
		fork("a", "try-a", "o"),
		fork("aa", "try-aa", "a"),
		fork("b", "try-b", "o"),
		fork("z", "orphan", "gone"),
	}
	out, notes := grouped(in)
	var got []string
	for _, s := range out {
		got = append(got, s.ID)
	}
	if strings.Join(got, " ") != "o a aa b c z" {
		t.Errorf("order %v", got)
	}
	if notes[0] != "" || !strings.Contains(notes[1], "session o") || !strings.Contains(notes[5], "(discarded since)") {
		t.Errorf("notes %q", notes)
	}
}
