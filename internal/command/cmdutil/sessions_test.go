package cmdutil_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// Parse takes two sessions or more, at most Max, each a session name and none twice, and says
// where a bad one was given: the flag, else the command.
func TestSessionsParse(t *testing.T) {
	for _, c := range []struct {
		flag  string
		names []string
		want  []string
		err   string
	}{
		{"--compare", []string{"default", "try1", "try2"}, []string{"", "try1", "try2"}, ""},
		{"", []string{"try2", "default"}, []string{"try2", ""}, ""},
		{"--compare", []string{"try1"}, nil, `--compare needs two sessions or more, comma-separated ("default": the unnamed session), 1 given`},
		{"", nil, nil, `compare needs two sessions or more ("default": the unnamed session), 0 given`},
		{"--compare", []string{"a", "b", "c", "d"}, nil, "--compare: 4 sessions, at most 3 at once"},
		{"", []string{"a", "b", "c", "d"}, nil, "compare: 4 sessions, at most 3 at once"},
		{"--compare", []string{"try1", "no/pe"}, nil, `--compare: session "no/pe": a session name is 1 to 32 letters, digits, '-' or '_', starting with a letter or digit ("default": the unnamed session)`},
		{"", []string{"-x", "try1"}, nil, `session "-x": a session name is 1 to 32 letters`},
		{"", []string{"try1", ""}, []string{"try1", ""}, ""}, // "" is the unnamed session, as for --session
		{"--compare", []string{"try1", "try1"}, nil, `--compare: session "try1" is named twice`},
		{"", []string{"default", "b", ""}, nil, `session "" is named twice`},
	} {
		got, err := cmdutil.Sessions{Verb: "compare", Flag: c.flag, Names: c.names, Max: 3}.Parse()
		switch {
		case c.err == "":
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s %q = %q, %v; want %q", c.flag, c.names, got, err, c.want)
			}
		case err == nil || !strings.HasPrefix(err.Error(), c.err) || got != nil:
			t.Errorf("%s %q = %q, %v; want the error %q", c.flag, c.names, got, err, c.err)
		}
	}
}

// A session named by a flag other than --session is checked as --session is, and the error
// names the flag.
func TestParseSessionArg(t *testing.T) {
	if name, err := cmdutil.ParseSessionArg("--all-but", "default"); err != nil || name != "" {
		t.Errorf(`--all-but default = %q, %v; want ""`, name, err)
	}
	if name, err := cmdutil.ParseSessionArg("--all-but", "try3"); err != nil || name != "try3" {
		t.Errorf("--all-but try3 = %q, %v", name, err)
	}
	want := `--all-but: session "a b": a session name is 1 to 32 letters, digits, '-' or '_', starting with a letter or digit ("default": the unnamed session)`
	if _, err := cmdutil.ParseSessionArg("--all-but", "a b"); err == nil || err.Error() != want {
		t.Errorf("--all-but \"a b\": %v; want %q", err, want)
	}
}
