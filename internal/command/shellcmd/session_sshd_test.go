package shellcmd_test

import (
	"path"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/shellcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// shell --session NAME stages a new named session (beside the unnamed one), runs the command
// at its relocated guest path, says where that is, and reviews that session: --yes applies
// its change, and the unnamed session's copy never saw it.
func TestShellNamedSession(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	id := staging.SessionIDOf(f.Workdir, "x")
	gpath, _ := staging.SessionGuestPath(f.Workdir, "x", f.Srv.Home, id)
	t.Cleanup(func() {
		f.Srv.Run(t, "rm", "-rf", gpath, path.Join(f.Srv.Home, ".cache", "limactl-mcp", "sessions", id))
	})
	stdout, stderr, code := run(t, f, nil, shellcmd.Options{Session: "x", Yes: true, Command: []string{"sh", "-c", "pwd; echo x > a.txt"}})
	if code != 0 || stdout != gpath+"\n" {
		t.Fatalf("exit %d, stdout %q (want the session's guest path %s)\n%s", code, stdout, gpath, stderr)
	}
	for _, want := range []string{"session x: its copy is at " + gpath + " in the guest", "Applied: 1 path written", "`limactl mcp review " + sessiontest.Instance + " --session x --undo`"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if got := f.ReadHost("a.txt"); got != "x\n" {
		t.Errorf("a.txt on the host: %q", got)
	}
	if got := f.Guest("cat a.txt"); got != "a\n" {
		t.Errorf("the unnamed session's copy: %q", got)
	}
	if _, stderr, code := run(t, f, nil, shellcmd.Options{Session: "-x", Command: []string{"true"}}); code == 0 || !strings.Contains(stderr, `--session "-x"`) {
		t.Errorf("a bad name: exit %d\n%s", code, stderr)
	}
}
