package netpolicy

import (
	"strings"
	"testing"
)

// A line of `net report --users` is guest output: an error line gives that user's error (its
// words capped), never another user's; anything else must be the user's record.
func TestParseRecordLine(t *testing.T) {
	long := strings.Repeat("x", 1500)
	for _, c := range []struct {
		line, user, wantErr string
	}{
		{`{"user":"lmcp-a","error":"no such file"}`, "lmcp-a", "no such file"},
		{`{"user":"lmcp-b","error":"no such file"}`, "lmcp-a", "another user's"},
		{`{"user":"lmcp-a","error":"` + long + `"}`, "lmcp-a", strings.Repeat("x", maxReportError) + "…"},
		{`{"user":"lmcp-a","source":"log","summary":{}}`, "lmcp-a", ""},
		{`{"user":"lmcp-b","source":"log","summary":{}}`, "lmcp-a", "does not check out"},
		{`{"user":"lmcp-a","source":"log"`, "lmcp-a", "not JSON"},
		{``, "lmcp-a", "not JSON"},
	} {
		rec, err := ParseRecordLine([]byte(c.line), c.user)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%.60q: %v", c.line, err)
		case c.wantErr == "" && rec.User != c.user:
			t.Errorf("%.60q: record of %q", c.line, rec.User)
		case c.wantErr != "" && err == nil:
			t.Errorf("%.60q for %s: no error", c.line, c.user)
		case c.wantErr != "" && !matchesAny(err.Error(), c.wantErr):
			t.Errorf("%.60q for %s: error %.100q, want %.100q", c.line, c.user, err, c.wantErr)
		}
	}
}

func matchesAny(s, alts string) bool {
	for _, a := range strings.Split(alts, "|") {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}
