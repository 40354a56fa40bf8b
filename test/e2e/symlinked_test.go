//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// An agent started in a project reached through a symlinked parent (macOS's /tmp ->
// /private/tmp, ~/src -> /Volumes/...) works on its own paths: the session is the real
// directory's, the tools take and give the path the agent was started in, and review applies
// to the real directory. (write_file used to fail with "permission denied" there, and nothing
// reached review.)
func TestSymlinkedParent(t *testing.T) {
	real := project(t, map[string]string{"a.txt": "a\n"})
	chownToUser(t, real)
	link := filepath.Dir(real) + "-link-" + filepath.Base(real)
	mustT(t, os.Symlink(filepath.Dir(real), link))
	t.Cleanup(func() { _ = os.Remove(link) })
	shown := filepath.Join(link, filepath.Base(real))
	discardOnCleanup(t, real)

	s := startServerIn(t, real, nil, "limactl-mcp", "serve", instanceName, "--workdir", shown)
	r := toolsuite.MustOK(t, s.Session, "read_file", map[string]any{"path": shown + "/a.txt"})
	if !strings.Contains(r.Text, "a") {
		t.Errorf("read_file through the link: %q", r.Text)
	}
	toolsuite.MustOK(t, s.Session, "write_file", map[string]any{"path": shown + "/new.txt", "content": "new\n"})
	if got := shellOK(t, s.Session, shown, "pwd && cat new.txt"); got != shown+"\nnew\n" {
		t.Errorf("pwd && cat new.txt in %s: %q, want the path the agent knows", shown, got)
	}
	r = toolsuite.MustOK(t, s.Session, "glob", map[string]any{"pattern": "*.txt", "path": shown})
	if !strings.Contains(r.Text, shown+"/new.txt") {
		t.Errorf("glob gives paths under %s: %q", shown, r.Text)
	}
	// One session, the real directory's, whichever way the person comes to review.
	if st := statusOf(t, real); st["pending_total"] != 1.0 {
		t.Errorf("status of %s: %v", real, st)
	}
	out, stderr, code := plugin(t, shown, "review", instanceName, "--yes", "--workdir", shown)
	if code != 0 {
		t.Fatalf("review --yes through the link: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := readHost(t, filepath.Join(real, "new.txt")); got != "new\n" {
		t.Errorf("new.txt on the host: %q", got)
	}
}
