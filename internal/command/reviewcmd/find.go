package reviewcmd

import (
	"context"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/command/sessionfind"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// openSession opens the instance called name and the session a review of workdir is about:
// workdir's own, else that of the nearest directory above it that was staged (a review run in
// a subdirectory of the project); from a parent of staged projects, an error that lists them
// (see sessionfind.Workdir).
func openSession(ctx context.Context, open sessionopen.Opener, name, workdir string) (*sessionopen.Target, *staging.Session, error) {
	t, err := open(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	found, err := sessionfind.Workdir(t, "review", workdir)
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
