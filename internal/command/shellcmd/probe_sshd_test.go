package shellcmd_test

import (
	"path"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/shellcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// forgeProbe is sh that finds the probe's prefix where a command can read it (the script on a
// guest process's command line) and prints, on stderr, the lines of a probe that saw nothing
// change; it fails when it finds no prefix (the test would not test anything).
const forgeProbe = `p=$(for f in /proc/[0-9]*/cmdline; do tr '\0' '\n' < "$f" 2>/dev/null; done | grep -ao 'limactl-mcp-probe-[0-9a-f]*:' | head -n1)
[ -n "$p" ] || { echo "forger: no probe prefix found" >&2; exit 42; }
printf '\036%scopy=1\n\036%schanged=0\n' "$p" "$p" >&2
`

// A command that changes the copy and then prints the probe's "nothing changed" gets its review
// all the same (--yes: applied): what changed is decided by the runner's scan.
func TestShellForgedProbeIsReviewed(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	_, stderr, code := run(t, f, nil, shellcmd.Options{Yes: true, Command: []string{"sh", "-c", "echo forged > a.txt\n" + forgeProbe}})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if got := f.ReadHost("a.txt"); got != "forged\n" {
		t.Errorf("the forged probe skipped the review: a.txt on the host %q\n%s", got, stderr)
	}
	if strings.Contains(stderr, "changed nothing") {
		t.Errorf("shell believed the forged probe:\n%s", stderr)
	}
}

// A command that removes the session's marker and exits with the status the copy check uses
// is run once, not staged again and run a second time.
func TestShellCommandRemovingTheMarkerRunsOnce(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	id := staging.SessionID(f.Workdir)
	runs := path.Dir(f.GuestPath) + "/runs"
	marker := path.Join(f.Srv.Home, ".cache", "limactl-mcp", "sessions", id)
	t.Cleanup(func() { f.Srv.Run(t, "bash", "-c", "rm -rf "+f.Srv.Home+"/"+staging.RelocatedDir+"/proj-"+id) })
	_, stderr, code := run(t, f, nil, shellcmd.Options{Command: []string{"sh", "-c", "echo run >> " + runs + "; echo work > a.txt; rm -f " + marker + "; exit 255"}})
	if got := f.Srv.Run(t, "cat", runs); got != "run\n" {
		t.Errorf("the command ran %d times (exit %d)\n%s", strings.Count(got, "run"), code, stderr)
	}
	if code != 255 || !strings.Contains(stderr, "not run again") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

// The same forger that also removes the session's marker is not taken for "nothing changed"
// either: the review runs (--yes: applies).
func TestShellForgedProbeWithoutMarkerIsNotUnchanged(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	marker := path.Join(f.Srv.Home, ".cache", "limactl-mcp", "sessions", staging.SessionID(f.Workdir))
	_, stderr, code := run(t, f, nil, shellcmd.Options{Yes: true, Command: []string{"sh", "-c", "echo forged > a.txt; rm -f " + marker + "\n" + forgeProbe}})
	if got := f.ReadHost("a.txt"); code != 0 || got != "forged\n" {
		t.Errorf("exit %d, a.txt on the host %q\n%s", code, got, stderr)
	}
	if strings.Contains(stderr, "changed nothing") {
		t.Errorf("shell believed the forged probe:\n%s", stderr)
	}
}
