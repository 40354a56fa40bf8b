package guest

import (
	"fmt"
	"testing"
)

// `net report --users`'s answer is split into one line per user asked for, in order; a line the
// output's cap cut, or one missing, is no answer (nil: that user is read alone), and lines past
// the users asked for are ignored.
func TestReportLines(t *testing.T) {
	for _, c := range []struct {
		out  string
		n    int
		want []string // "<nil>" for no answer
	}{
		{"a\nb\nc\n", 3, []string{"a", "b", "c"}},
		{"a\nb\nc", 3, []string{"a", "b", "<nil>"}},
		{"a\n", 3, []string{"a", "<nil>", "<nil>"}},
		{"", 2, []string{"<nil>", "<nil>"}},
		{"a\nb\nc\nd\n", 2, []string{"a", "b"}},
		{"\n{}\n", 2, []string{"", "{}"}},
	} {
		got := reportLines(c.out, c.n)
		if len(got) != c.n {
			t.Fatalf("%q: %d lines, want %d", c.out, len(got), c.n)
		}
		for i, l := range got {
			s := string(l)
			if l == nil {
				s = "<nil>"
			}
			if s != c.want[i] {
				t.Errorf("%q: line %d is %q, want %q", c.out, i, s, c.want[i])
			}
		}
	}
}

// NetRecords refuses, before asking the guest, a name limactl-mcp does not make (it goes on a
// root command line) and more users than one report reads.
func TestNetRecordsRefusesBadUsers(t *testing.T) {
	c := New(nil, Options{})
	for _, users := range [][]string{{"lmcp-ok", "root"}, {"lmcp-a,lmcp-b"}, {"lmcp-a b"}, tooMany()} {
		if _, err := c.NetRecords(t.Context(), users); err == nil {
			t.Errorf("%q: no error", users)
		}
	}
}

func tooMany() []string {
	var u []string
	for i := range 257 {
		u = append(u, fmt.Sprintf("lmcp-%d", i))
	}
	return u
}
