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

// macOS-shaped working directories, made on this Linux host: a project under /Users or
// /Volumes is staged at the same path in the guest; one under $TMPDIR (/var/folders/...) is
// staged at a relocated path in the guest user's home, and the agent still uses its own
// paths. Each is reviewed back to the host.
func TestMacOSShapedPaths(t *testing.T) {
	for _, tc := range []struct {
		top, dir string
		same     bool
	}{
		{"/Users", "/Users/mcp-e2e/src/proj", true},
		{"/Volumes", "/Volumes/External/src/proj", true},
		{"/var/folders", "/var/folders/xy/abc123/T/proj", false},
	} {
		t.Run(tc.top, func(t *testing.T) {
			if _, err := os.Lstat(tc.top); err == nil {
				t.Fatalf("%s exists on this host: the test makes and removes it, so it will not run here", tc.top)
			}
			mustT(t, os.MkdirAll(tc.dir, 0o755))
			t.Cleanup(func() { _ = os.RemoveAll(tc.top) })
			mustT(t, os.WriteFile(filepath.Join(tc.dir, "a.txt"), []byte("a\n"), 0o644))
			chownToUser(t, tc.dir)
			discardOnCleanup(t, tc.dir)

			s := startServerIn(t, tc.dir, nil, "limactl-mcp", "serve", instanceName)
			r := toolsuite.MustOK(t, s.Session, "read_file", map[string]any{"path": tc.dir + "/a.txt"})
			if !strings.Contains(r.Text, "a") {
				t.Errorf("read_file: %q", r.Text)
			}
			toolsuite.MustOK(t, s.Session, "write_file", map[string]any{"path": tc.dir + "/new.txt", "content": "new\n"})
			if got := shellOK(t, s.Session, tc.dir, "pwd"); got != tc.dir+"\n" {
				t.Errorf("pwd: %q, want the host path", got)
			}
			st := statusOf(t, tc.dir)
			gp, _ := st["guest_path"].(string)
			if (gp == tc.dir) != tc.same {
				t.Errorf("guest path %q for %s (same path wanted: %v)", gp, tc.dir, tc.same)
			}
			if !tc.same {
				if !strings.Contains(gp, "/limactl-mcp-staged/") {
					t.Errorf("relocated guest path %q", gp)
				}
				if logs := s.Stderr.String(); !strings.Contains(logs, "guest_path="+gp) {
					t.Errorf("serve does not say where it staged %s:\n%s", tc.dir, logs)
				}
			}
			out, stderr, code := plugin(t, tc.dir, "review", instanceName, "--yes")
			if code != 0 {
				t.Fatalf("review --yes: exit %d\n%s\n%s", code, out, stderr)
			}
			if got := readHost(t, filepath.Join(tc.dir, "new.txt")); got != "new\n" {
				t.Errorf("new.txt on the host: %q", got)
			}
		})
	}
}
