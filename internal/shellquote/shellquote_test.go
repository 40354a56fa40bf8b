package shellquote

import "testing"

// The command line reaches the guest's shell word for word; leading NAME=VALUE words stay
// assignments, as with `limactl shell INSTANCE NAME=VALUE CMD`.
func TestJoinCommand(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"claude", "implement the parser"}, "claude 'implement the parser'"},
		{[]string{"A=1 2", "env", "B=3"}, "A='1 2' env B=3"},
		{[]string{"sh", "-c", `echo "it's" $HOME`}, `sh -c 'echo "it'\''s" $HOME'`},
	} {
		if got := JoinCommand(tc.words); got != tc.want {
			t.Errorf("JoinCommand(%q) = %s, want %s", tc.words, got, tc.want)
		}
	}
}
