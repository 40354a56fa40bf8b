package cmdutil

import (
	"context"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Sessions is what a command line names of several sessions of one working directory, to
// compare them: by a flag (`review --compare a,b`) or by the command's arguments (`compare VM
// a b`). Parse checks the names before anything is opened; the first is then the Selector's
// Session, and Ref.OpenCompared opens them all.
type Sessions struct {
	// Verb is the command ("compare"); Flag is the flag that names the sessions ("--compare"),
	// "" when they are the command's arguments. The errors name the flag, else the command.
	Verb, Flag string
	// Names are the names as given ("default": the unnamed session).
	Names []string
	// Max bounds how many one command line names.
	Max int
}

// Parse checks the names: two or more, at most Max, each a session name, none twice. It
// returns them as Selector.Session takes them ("" for the unnamed session).
func (s Sessions) Parse() ([]string, error) {
	what := s.Flag
	if what == "" {
		what = s.Verb
	}
	if len(s.Names) < 2 {
		listed := ""
		if s.Flag != "" {
			listed = ", comma-separated"
		}
		return nil, fmt.Errorf("%s needs two sessions or more%s (%q: the unnamed session), %d given", what, listed, staging.DefaultSessionName, len(s.Names))
	}
	if len(s.Names) > s.Max {
		return nil, fmt.Errorf("%s: %d sessions, at most %d at once", what, len(s.Names), s.Max)
	}
	names := make([]string, len(s.Names))
	seen := map[string]bool{}
	for i, n := range s.Names {
		name, err := ParseSessionArg(s.Flag, n)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, fmt.Errorf("%ssession %q is named twice", flagPrefix(s.Flag), n)
		}
		seen[name], names[i] = true, name
	}
	return names, nil
}

// ParseSessionArg is staging.ParseSessionName for a session named by a flag other than
// --session ("--all-but"), or by an argument (flag ""): the error says where the name was
// given.
func ParseSessionArg(flag, given string) (string, error) {
	name, err := staging.ParseSessionName(given)
	if err != nil {
		return "", fmt.Errorf("%ssession %q: a session name is 1 to 32 letters, digits, '-' or '_', starting with a letter or digit (%q: the unnamed session)", flagPrefix(flag), given, staging.DefaultSessionName)
	}
	return name, nil
}

// flagPrefix is how an error starts that is about a value of flag ("" for an argument).
func flagPrefix(flag string) string {
	if flag == "" {
		return ""
	}
	return flag + ": "
}

// OpenCompared opens the instance, the session the Ref names (as OpenSession: the working
// directory's own, or that of the staged project holding it) and the others of that session's
// working directory, in that order. When the working directory is inside a staged project, it
// says which project's sessions are compared. The caller closes the Target.
func (r *Ref) OpenCompared(ctx context.Context, others []string) (*sessionopen.Target, []*staging.Session, error) {
	t, first, err := r.OpenSession(ctx)
	if err != nil {
		return nil, nil, err
	}
	if r.Inside(first) {
		fmt.Fprintf(r.errOut, "Comparing sessions of %s.\n", r.Which(first))
	}
	sessions := []*staging.Session{first}
	for _, name := range others {
		s, err := t.Session(first.State.Workdir, name)
		if err != nil {
			t.Close()
			return nil, nil, err
		}
		sessions = append(sessions, s)
	}
	return t, sessions, nil
}
