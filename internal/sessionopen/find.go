package sessionopen

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Find is the working directory of the session called session ("" for the unnamed one) a
// command run in workdir is about: workdir's own session, else that of the nearest staged directory above it (the command was run in a
// subdirectory of the project); workdir itself when neither exists, so that
// Target.Session says there is none. When neither exists but directories below
// workdir were staged (the command was run in a parent of the project), the error lists them
// with the command that acts on each (`limactl mcp VERB INSTANCE --workdir DIR`): never a
// command that would stage workdir as a second session.
func (t *Target) Find(verb, workdir, session string) (string, error) {
	found, err := nearestStaged(t.Store, workdir, session)
	if err != nil || found != "" {
		return found, err
	}
	all, err := t.Store.List()
	if err != nil {
		return "", err
	}
	var below []string
	for _, st := range all {
		if st.Session == session && tree.Below(workdir, st.Workdir) {
			below = append(below, st.Workdir)
		}
	}
	if len(below) == 0 {
		return workdir, nil
	}
	sort.Strings(below)
	name := t.Instance.Name + staging.SessionFlag(session)
	var b strings.Builder
	if len(below) == 1 {
		fmt.Fprintf(&b, "%s has no staged session of its own in instance %q, but %s, below it, has one: %s it with `limactl mcp %s %s --workdir %s`",
			termsafe.String(workdir), t.Instance.Name, termsafe.String(below[0]), verb, verb, name, termsafe.String(shellquote.Quote(below[0])))
		return "", errors.New(b.String())
	}
	fmt.Fprintf(&b, "%s has no staged session of its own in instance %q, but %d directories below it have one; %s one of them with:", termsafe.String(workdir), t.Instance.Name, len(below), verb)
	for _, w := range below {
		fmt.Fprintf(&b, "\n  limactl mcp %s %s --workdir %s", verb, name, termsafe.String(shellquote.Quote(w)))
	}
	return "", errors.New(b.String())
}

// nearestStaged is workdir, or the nearest directory above it, that has the session called
// session in store ("" when none has).
func nearestStaged(store staging.Store, workdir, session string) (string, error) {
	for dir := workdir; ; {
		_, _, err := store.LoadSession(dir, session)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, staging.ErrNoSession) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}
