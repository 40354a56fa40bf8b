package sessionopen

import (
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// Which says which working directory a command is about, for a person: the session's, and
// the directory the command was run in when that is below it (see Target.Find).
func Which(sess *staging.Session, workdir string) string {
	if sess.State.Workdir == workdir {
		return termsafe.String(workdir)
	}
	return fmt.Sprintf("%s (the staged project that holds %s)", termsafe.String(sess.State.Workdir), termsafe.String(workdir))
}
