package reviewcmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// openSession opens the instance called name and the session a review of workdir is about:
// workdir's own, else that of the nearest directory above it that was staged (a review run in
// a subdirectory of the project).
// When neither exists but directories below workdir were staged (a review run in a parent of
// the project), the error lists them with the command that reviews each: never a command that
// would stage workdir as a second session.
func openSession(ctx context.Context, open sessionopen.Opener, name, workdir string) (*sessionopen.Target, *staging.Session, error) {
	t, err := open(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	found, err := findWorkdir(t, workdir)
	if err != nil {
		t.Close()
		return nil, nil, err
	}
	s, err := t.Session(found)
	if err != nil {
		t.Close()
		return nil, nil, err
	}
	return t, s, nil
}

// which says which working directory a review is about, for a person: the session's, and
// the directory the review was run in when that is below it.
func which(sess *staging.Session, workdir string) string {
	if sess.State.Workdir == workdir {
		return termsafe.String(workdir)
	}
	return fmt.Sprintf("%s (the staged project that holds %s)", termsafe.String(sess.State.Workdir), termsafe.String(workdir))
}

// findWorkdir is the working directory of the session for workdir (see openSession); workdir
// itself when no session is found, so that Target.Session says there is none.
func findWorkdir(t *sessionopen.Target, workdir string) (string, error) {
	for dir := workdir; ; {
		_, _, err := t.Store.Load(dir)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, staging.ErrNoSession) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	all, err := t.Store.List()
	if err != nil {
		return "", err
	}
	var below []string
	prefix := strings.TrimSuffix(workdir, string(filepath.Separator)) + string(filepath.Separator)
	for _, st := range all {
		if strings.HasPrefix(st.Workdir, prefix) {
			below = append(below, st.Workdir)
		}
	}
	if len(below) == 0 {
		return workdir, nil
	}
	sort.Strings(below)
	name := t.Instance.Name
	var b strings.Builder
	if len(below) == 1 {
		fmt.Fprintf(&b, "%s has no staged session of its own in instance %q, but %s, below it, has one: review it with `limactl mcp review %s --workdir %s`",
			termsafe.String(workdir), name, termsafe.String(below[0]), name, termsafe.String(shellquote.Quote(below[0])))
		return "", errors.New(b.String())
	}
	fmt.Fprintf(&b, "%s has no staged session of its own in instance %q, but %d directories below it have one; review one of them with:", termsafe.String(workdir), name, len(below))
	for _, w := range below {
		fmt.Fprintf(&b, "\n  limactl mcp review %s --workdir %s", name, termsafe.String(shellquote.Quote(w)))
	}
	return "", errors.New(b.String())
}
