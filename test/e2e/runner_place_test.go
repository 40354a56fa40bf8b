//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

const systemRunnerDir = "/usr/local/libexec/limactl-mcp"

// runnerExe is the executable of the runner that ran a command: the command's parent.
const runnerExe = `readlink /proc/$PPID/exe`

// TestRunnerKeptWhereTheAgentCannotWrite: the runner lives where only root can change it,
// installed once with Lima's passwordless sudo, so that a new process proves it unchanged with
// a few lstats instead of reading 3.3 MB back; the guest user cannot touch it; a copy that is
// no longer safely root's is installed again; a guest where it cannot be installed keeps the
// user's copy, read back before each start.
func TestRunnerKeptWhereTheAgentCannotWrite(t *testing.T) {
	t.Cleanup(func() { guestShell(t, `rm -f ~/.cache/limactl-mcp/no-system-runner`) })
	guestShell(t, `sudo rm -rf `+systemRunnerDir+`; rm -f ~/.cache/limactl-mcp/no-system-runner`)

	s := startServer(t, nil, "limactl-mcp", "serve", "--debug", instanceName)
	exe := strings.TrimSpace(shellOK(t, s.Session, "/", runnerExe))
	if !strings.HasPrefix(exe, systemRunnerDir+"/runner-") {
		t.Fatalf("the runner runs from %q, want %s/runner-*\n%s", exe, systemRunnerDir, s.Stderr.String())
	}
	if !strings.Contains(s.Stderr.String(), "installed the guest runner") {
		t.Errorf("the first server did not say it installed the runner:\n%s", s.Stderr.String())
	}
	if got, want := guestShell(t, `stat -c '%u %g %a %F' `+systemRunnerDir+` `+exe), "0 0 755 directory\n0 0 755 regular file\n"; got != want {
		t.Errorf("owner and mode:\n%s\nwant:\n%s", got, want)
	}
	// The guest user (the agent's) can neither change, replace nor remove it.
	out := guestShell(t, `f=`+shq(exe)+`
(cp /bin/true "$f") 2>/dev/null && echo CHANGED
(: > "$f.new") 2>/dev/null && echo CREATED
(mv /bin/true "$f") 2>/dev/null && echo REPLACED
(rm -f "$f") 2>/dev/null && [ ! -e "$f" ] && echo REMOVED
echo checked`)
	if out != "checked\n" {
		t.Errorf("the guest user changed the runner:\n%s", out)
	}

	// The next server: a few lstats, no read-back, no install.
	s2 := startServer(t, nil, "limactl-mcp", "serve", "--debug", instanceName)
	if got := strings.TrimSpace(shellOK(t, s2.Session, "/", runnerExe)); got != exe {
		t.Errorf("the second server's runner runs from %q, want %q", got, exe)
	}
	log2 := s2.Stderr.String()
	if !strings.Contains(log2, "root-owned=true") || strings.Contains(log2, "read back") || strings.Contains(log2, "installed the guest runner") {
		t.Errorf("the second server did not take the root-owned runner as it is:\n%s", log2)
	}

	// The first two servers end first. Each hands its runner over to an ssh connection of its
	// own a few seconds after it starts, and checks the runner again then: one that did so just
	// after the chmod below installed it again under the third server's runner, which then ran
	// from a deleted file (seen on a loaded machine). Their hand-over is awaited (bounded).
	for _, sv := range []*server{s, s2} {
		for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(sv.Stderr.String(), "handoff=true") && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
		}
		if err := sv.Session.Close(); err != nil {
			t.Logf("closing a server: %v", err)
		}
	}

	// No longer safely root's (a group-writable directory): installed again.
	guestShell(t, `sudo chmod 0775 `+systemRunnerDir)
	s3 := startServer(t, nil, "limactl-mcp", "serve", "--debug", instanceName)
	if got := strings.TrimSpace(shellOK(t, s3.Session, "/", runnerExe)); got != exe {
		t.Errorf("the third server's runner runs from %q, want %q", got, exe)
	}
	if !strings.Contains(s3.Stderr.String(), "installed the guest runner") {
		t.Errorf("a group-writable runner directory was not installed again:\n%s", s3.Stderr.String())
	}
	if got := guestShell(t, `stat -c '%a' `+systemRunnerDir); got != "755\n" {
		t.Errorf("the directory's mode after the new install: %s", got)
	}

	// Where it cannot be installed (recorded once): the user's copy, read back.
	guestShell(t, `sudo rm -rf `+systemRunnerDir+`; mkdir -p ~/.cache/limactl-mcp; touch ~/.cache/limactl-mcp/no-system-runner`)
	s4 := startServer(t, nil, "limactl-mcp", "serve", "--debug", instanceName)
	home := guestHome(t)
	if got := strings.TrimSpace(shellOK(t, s4.Session, "/", runnerExe)); !strings.HasPrefix(got, home+"/.cache/limactl-mcp/runner-") {
		t.Errorf("without a root-owned runner, the runner runs from %q, want the user's copy", got)
	}
	if !strings.Contains(s4.Stderr.String(), "read back") {
		t.Errorf("the user's copy was not read back:\n%s", s4.Stderr.String())
	}
}
