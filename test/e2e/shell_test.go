//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
)

// `limactl mcp shell`, end to end: through Lima's plugin discovery (`limactl mcp`), on the
// real VM, in tmux for the PTY.

// mcpShell runs `limactl mcp shell ARGS` as the user in dir, without a terminal, with extra
// environment variables; it returns stdout, stderr and the exit code.
func mcpShell(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := mcpShellCmd(t, dir, env, args...)
	stdout, stderr, err := runCmd(cmd)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("limactl mcp shell %v: %v", args, err)
	}
	return stdout, stderr, code
}

func mcpShellCmd(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := vm.Command(ctxT(t, 5*time.Minute), "limactl", append([]string{"mcp", "shell"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// tmuxShell runs `limactl mcp shell ARGS` in a width×height terminal, as the user, in dir;
// after it exits the pane shows EXIT=<its status> and the terminal's modes (to check that
// raw mode was restored).
func tmuxShell(t *testing.T, dir string, width, height int, env []string, args ...string) *tmuxtest.Session {
	t.Helper()
	cmd := vm.Command(ctxT(t, 5*time.Minute), "limactl", append([]string{"mcp", "shell"}, args...)...)
	return tmuxCommand(t, dir, width, height, cmd, env, `; echo EXIT=$?; echo MODES: $(stty -a | tr ' ;' '\n\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\n' ' ')END; sleep 120`)
}

// An interactive login shell: same path, a real PTY of the terminal's size that follows a
// resize, Ctrl-C to the guest program (not to us); the session edits, creates, deletes,
// chmods and makes a symlink; on exit the review TUI applies a subset, and the exit status is
// the shell's.
func TestShellInteractive(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "keep.txt": "keep\n"})
	discardOnCleanup(t, dir)
	s := tmuxShell(t, dir, 100, 30, nil, instanceName)
	s.WaitFor(2*time.Minute, filepath.Base(dir)+"$") // the prompt (tmux drops the space after it)
	s.TypeLine(`echo "PWD=$(pwd)"; echo "SIZE=$(stty size)"; echo "TTY=$(tty)"; echo "TERM=$TERM"`)
	s.WaitFor(30*time.Second, "PWD="+dir, "SIZE=30 100", "TTY=/dev/pts/", "TERM=xterm-256color")

	// Resize: the guest's PTY follows (SIGWINCH).
	s.Resize(120, 40)
	time.Sleep(500 * time.Millisecond)
	s.TypeLine(`echo "SIZE2=$(stty size)"`)
	s.WaitFor(30*time.Second, "SIZE2=40 120")

	// Ctrl-C goes to the guest program, which catches it; the shell (and we) go on.
	s.TypeLine(`bash -c 'trap "echo GUEST-GOT-SIGINT; exit 0" INT; echo WAITING; sleep 60 & wait'`)
	s.WaitFor(30*time.Second, "WAITING")
	time.Sleep(500 * time.Millisecond)
	s.Keys("C-c")
	s.WaitFor(30*time.Second, "GUEST-GOT-SIGINT")

	s.TypeLine(`echo guest > a.txt && rm b.txt && chmod 755 c.txt && echo new > new.txt && ln -s keep.txt link && echo EDITS-DONE`)
	s.WaitFor(30*time.Second, "EDITS-DONE")
	s.TypeLine("exit 7")

	// The review: everything but new.txt.
	s.WaitFor(2*time.Minute, "5 files changed", "a.txt", "b.txt", "c.txt", "new.txt", "link")
	for i := 0; i < 6 && !strings.Contains(s.Screen(), "> ✓ A new.txt"); i++ {
		s.Keys("Down")
		time.Sleep(200 * time.Millisecond)
	}
	s.WaitFor(10*time.Second, "> ✓ A new.txt")
	s.Keys("Space")
	s.WaitFor(10*time.Second, "> • A new.txt")
	s.Keys("Enter")
	s.WaitFor(30*time.Second, "Also revert these rejected files in the guest?")
	s.Keys("Enter") // no: new.txt stays pending
	s.WaitFor(30*time.Second, "Apply these changes?")
	s.Keys("y")
	scr := s.WaitFor(2*time.Minute, "Applied: 4 paths written", "EXIT=7", "END")
	if !strings.Contains(scr, "MODES: icanon echo END") {
		t.Errorf("the terminal is not back in cooked mode after the command:\n%s", scr)
	}

	if got := readHost(t, filepath.Join(dir, "a.txt")); got != "guest\n" {
		t.Errorf("a.txt on the host: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt still on the host: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "c.txt")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("c.txt on the host: %v %v, want mode 755", st.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != "keep.txt" {
		t.Errorf("link on the host: %q %v", target, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt reached the host though it was left out: %v", err)
	}
	if st := statusOf(t, dir); st["pending_total"] != 1.0 {
		t.Errorf("pending after the review: %v", st)
	}
}

// A TERM the guest has no terminfo for falls back to one it has, and says so. (With a
// variable passed: the PTY and the script handed over through the FIFO, together.)
func TestShellTermFallback(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n"})
	discardOnCleanup(t, dir)
	s := tmuxShell(t, dir, 80, 24, []string{"TERM=limactl-mcp-no-such-term", "SHELLTEST_TTY=tty-secret"}, "--no-review", "--env", "SHELLTEST_TTY",
		instanceName, "--", "sh", "-c", `echo "GUEST-TERM=$TERM TTY=$(tty) V=$SHELLTEST_TTY"`)
	s.WaitFor(2*time.Minute, "no terminfo for TERM=limactl-mcp-no-such-term", "GUEST-TERM=xterm-256color TTY=/dev/pts/", "V=tty-secret", "EXIT=0")
}

// Scripts: --yes applies every change, the cases of Lima's own `shell --sync` tests (same
// path, modified and new files, deletion, new directory, chmod, symlink target, host
// ownership kept, a run from a subdirectory), stdout carries the command's output only.
func TestShellYesScript(t *testing.T) {
	dir := project(t, map[string]string{
		"foo.txt": "", "bar.txt": "", "del.txt": "x\n",
		"modify.sh":     "#!/bin/sh\nset -eu\necho \"modified foo\" > foo.txt\necho \"modified bar\" > bar.txt\n",
		"executable.sh": "#!/bin/sh\n", "metadata-perms.txt": "m\n", "target_a.txt": "a\n", "target_b.txt": "b\n",
		"ownership-test.txt": "o\n", "sub/": "",
	})
	mustT(t, os.Symlink("target_a.txt", filepath.Join(dir, "current_link.txt")))
	chownToUser(t, dir)
	discardOnCleanup(t, dir)
	uid := func(p string) uint32 {
		st, err := os.Lstat(p)
		mustT(t, err)
		return st.Sys().(*syscall.Stat_t).Uid
	}
	ownerBefore := uid(filepath.Join(dir, "ownership-test.txt"))

	script := `pwd && ./modify.sh && rm -f del.txt && mkdir -p new_directory && echo "foo bar baz" > new_directory/new_file.txt && ` +
		`chmod 744 metadata-perms.txt && ln -snf target_b.txt current_link.txt && echo o2 >> ownership-test.txt && sudo -n chown root ownership-test.txt`
	stdout, stderr, code := mcpShell(t, dir, nil, "--yes", instanceName, "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if stdout != dir+"\n" {
		t.Errorf("stdout %q, want only the command's output: the guest's pwd, the host's path %s", stdout, dir)
	}
	for p, want := range map[string]string{
		"foo.txt": "modified foo\n", "bar.txt": "modified bar\n", "new_directory/new_file.txt": "foo bar baz\n", "ownership-test.txt": "o\no2\n",
	} {
		if got := readHost(t, filepath.Join(dir, p)); got != want {
			t.Errorf("%s on the host: %q, want %q", p, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "del.txt")); !os.IsNotExist(err) {
		t.Errorf("del.txt still on the host: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "metadata-perms.txt")); err != nil || st.Mode().Perm() != 0o744 {
		t.Errorf("metadata-perms.txt: %v %v, want 744", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(dir, "executable.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("executable.sh: %v %v, want 755 kept", st.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "current_link.txt")); err != nil || target != "target_b.txt" {
		t.Errorf("current_link.txt: %q %v", target, err)
	}
	if got := uid(filepath.Join(dir, "ownership-test.txt")); got != ownerBefore {
		t.Errorf("ownership-test.txt owner on the host: %d, want %d kept", got, ownerBefore)
	}
	if !strings.Contains(stderr, "Applied:") {
		t.Errorf("stderr does not report the apply:\n%s", stderr)
	}

	// From a subdirectory: the project's session, in the same subdirectory in the guest.
	stdout, stderr, code = mcpShell(t, filepath.Join(dir, "sub"), nil, "--yes", instanceName, "--", "sh", "-c", "pwd > pwd.txt")
	if code != 0 {
		t.Fatalf("from sub/: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := readHost(t, filepath.Join(dir, "sub", "pwd.txt")); got != filepath.Join(dir, "sub")+"\n" {
		t.Errorf("sub/pwd.txt: %q", got)
	}
	guestShell(t, "test -d "+shq(dir)) // the project's copy is still there
}

// A working directory whose path has spaces and quotes: staged at that same path, and back.
func TestShellPathWithSpacesAndQuotes(t *testing.T) {
	base := project(t, map[string]string{"x": ""})
	dir := filepath.Join(base, `sync test 'with' "quotes"`, "sync-test")
	mustT(t, os.MkdirAll(dir, 0o755))
	mustT(t, os.WriteFile(filepath.Join(dir, "foo.txt"), nil, 0o644))
	mustT(t, os.WriteFile(filepath.Join(dir, "modify.sh"), []byte("#!/bin/sh\nset -eu\necho \"modified foo\" > foo.txt\n"), 0o755))
	chownToUser(t, base)
	discardOnCleanup(t, dir)
	stdout, stderr, code := mcpShell(t, dir, nil, "--yes", instanceName, "--", "sh", "-c", "pwd; ./modify.sh")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if stdout != dir+"\n" {
		t.Errorf("pwd in the guest %q, want %q", stdout, dir)
	}
	if got := readHost(t, filepath.Join(dir, "foo.txt")); got != "modified foo\n" {
		t.Errorf("foo.txt: %q", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("the directory holds %d entries, want 2", len(ents))
	}
}

// The exit status is the command's; without a terminal and without --yes nothing is written,
// and stderr names the review command.
func TestShellExitCodes(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n"})
	discardOnCleanup(t, dir)
	for _, tc := range []struct {
		script string
		code   int
	}{
		{"true", 0}, {"exit 3", 3}, {"false", 1}, {"no-such-command-here", 127}, {"kill -TERM $$", 143},
	} {
		_, stderr, code := mcpShell(t, dir, nil, instanceName, "--", "sh", "-c", tc.script)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d\n%s", tc.script, code, tc.code, stderr)
		}
	}
	stdout, stderr, code := mcpShell(t, dir, nil, instanceName, "--", "sh", "-c", "echo x > x.txt; exit 5")
	if code != 5 {
		t.Errorf("exit %d, want 5\n%s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q: the summary belongs on stderr", stdout)
	}
	if !strings.Contains(stderr, "limactl mcp review "+instanceName) || !strings.Contains(stderr, "x.txt") {
		t.Errorf("stderr does not show the change and the review command:\n%s", stderr)
	}
	if _, err := os.Lstat(filepath.Join(dir, "x.txt")); !os.IsNotExist(err) {
		t.Errorf("x.txt was written without consent: %v", err)
	}
	// A missing instance: a clear error, nothing hangs.
	_, stderr, code = mcpShell(t, dir, nil, "no-such-instance-x", "--", "true")
	if code == 0 || !strings.Contains(stderr, "no-such-instance-x") {
		t.Errorf("missing instance: exit %d\n%s", code, stderr)
	}
}

// Nothing of the host's environment arrives unless named; --env and --agent-env pass what they
// name, say so first, and the values are on no host command line.
func TestShellEnv(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n"})
	discardOnCleanup(t, dir)
	env := []string{"SHELLTEST_NAMED=s3cret-named", "SHELLTEST_NOT_NAMED=leaked", "ANTHROPIC_API_KEY=sk-test-anthropic"}
	stdout, stderr, code := mcpShell(t, dir, env, "--env", "SHELLTEST_NAMED", "--env", "SHELLTEST_GIVEN=given value", instanceName, "--", "sh", "-c",
		`echo "named=${SHELLTEST_NAMED-unset} not=${SHELLTEST_NOT_NAMED-unset} given=${SHELLTEST_GIVEN-unset} key=${ANTHROPIC_API_KEY-unset}"`)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if want := "named=s3cret-named not=unset given=given value key=unset\n"; stdout != want {
		t.Errorf("guest env: %q, want %q", stdout, want)
	}
	if !strings.Contains(stderr, "passing SHELLTEST_NAMED, SHELLTEST_GIVEN to the guest") {
		t.Errorf("stderr does not name what is passed:\n%s", stderr)
	}
	stdout, stderr, code = mcpShell(t, dir, env, "--agent-env", instanceName, "--", "sh", "-c", `echo "key=${ANTHROPIC_API_KEY-unset} not=${SHELLTEST_NOT_NAMED-unset}"`)
	if code != 0 || stdout != "key=sk-test-anthropic not=unset\n" || !strings.Contains(stderr, "passing ANTHROPIC_API_KEY to the guest") {
		t.Errorf("--agent-env: exit %d stdout %q\n%s", code, stdout, stderr)
	}
	_, stderr, code = mcpShell(t, dir, nil, "--env", "SHELLTEST_UNSET_X", instanceName, "--", "true")
	if code == 0 || !strings.Contains(stderr, "--env SHELLTEST_UNSET_X=VALUE") {
		t.Errorf("--env of an unset variable: exit %d\n%s", code, stderr)
	}

	// While a command with a secret runs, no process on the host shows the secret.
	cmd := mcpShellCmd(t, dir, env, "--env", "SHELLTEST_NAMED", "--no-review", instanceName, "--", "sleep", "6")
	mustT(t, cmd.Start())
	defer func() { _ = cmd.Wait() }()
	time.Sleep(3 * time.Second)
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), "s3cret-named") {
			t.Errorf("%s shows the secret: %q", p, strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
}

// A host edit made while the command runs is a conflict at review, never overwritten; --yes
// applies the rest and lists it. Two shells on the same session at once both work.
func TestShellHostEditConflict(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	discardOnCleanup(t, dir)
	// Stage first, so that the command below starts at once.
	if _, stderr, code := mcpShell(t, dir, nil, instanceName, "--", "true"); code != 0 {
		t.Fatalf("staging: exit %d\n%s", code, stderr)
	}
	// A second shell on the same session, running all along.
	other := mcpShellCmd(t, dir, nil, "--no-review", instanceName, "--", "sh", "-c", "echo other > other.txt; sleep 8")
	var otherErr strings.Builder
	other.Stderr = &otherErr
	mustT(t, other.Start())

	cmd := mcpShellCmd(t, dir, nil, "--yes", instanceName, "--", "sh", "-c", "echo guest > a.txt; echo guest > b.txt; echo STARTED; sleep 6")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	mustT(t, cmd.Start())
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stdout.String(), "STARTED") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	mustT(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("host\n"), 0o644))
	err := cmd.Wait()
	if err != nil {
		t.Fatalf("shell --yes: %v\n%s", err, stderr.String())
	}
	if got := readHost(t, filepath.Join(dir, "a.txt")); got != "host\n" {
		t.Errorf("the host edit was overwritten: a.txt = %q", got)
	}
	if got := readHost(t, filepath.Join(dir, "b.txt")); got != "guest\n" {
		t.Errorf("b.txt = %q, want the guest's version applied", got)
	}
	if !strings.Contains(stderr.String(), "a.txt") || !strings.Contains(strings.ToLower(stderr.String()), "conflict") {
		t.Errorf("the conflict is not listed:\n%s", stderr.String())
	}
	if err := other.Wait(); err != nil {
		t.Errorf("the second shell on the same session: %v\n%s", err, otherErr.String())
	}
	if !strings.Contains(otherErr.String(), "limactl mcp review") {
		t.Errorf("--no-review does not name the review command:\n%s", otherErr.String())
	}
	if got := strings.TrimSpace(guestShell(t, "cat "+shq(dir+"/a.txt"))); got != "guest" {
		t.Errorf("the guest's a.txt: %q, want the guest's version kept, pending", got)
	}
}

// Killing our process (SIGKILL, SIGTERM, or the SIGHUP of a closed terminal) while the command
// runs: the guest keeps the work, the host is untouched, and a review later gets it.
func TestShellKilled(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n"})
	discardOnCleanup(t, dir)
	signals := []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGHUP}
	for _, sig := range signals {
		name := "w-" + strconv.Itoa(int(sig)) + ".txt"
		marker := fmt.Sprintf("STARTED-%d", sig)
		s := tmuxShell(t, dir, 80, 24, nil, instanceName, "--", "sh", "-c", fmt.Sprintf("echo work > %s; echo %s; sleep 30", name, marker))
		s.WaitFor(2*time.Minute, marker)
		pid := findProc(t, "limactl-mcp\x00shell\x00", marker)
		mustT(t, syscall.Kill(pid, sig))
		if sig == syscall.SIGTERM {
			s.WaitFor(time.Minute, "interrupted: nothing was applied", "EXIT=130")
		} else {
			s.WaitFor(time.Minute, "EXIT=")
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%v: %s reached the host: %v", sig, name, err)
		}
		if got := readHost(t, filepath.Join(dir, "a.txt")); got != "a\n" {
			t.Errorf("%v: a.txt on the host: %q", sig, got)
		}
		if got := strings.TrimSpace(guestShell(t, "cat "+shq(dir+"/"+name))); got != "work" {
			t.Errorf("%v: the guest lost the work: %q", sig, got)
		}
	}
	out, stderr, code := plugin(t, dir, "review", instanceName, "--yes")
	if code != 0 {
		t.Fatalf("review --yes: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, sig := range signals {
		if got := readHost(t, filepath.Join(dir, "w-"+strconv.Itoa(int(sig))+".txt")); got != "work\n" {
			t.Errorf("after the review, w-%d.txt = %q", sig, got)
		}
	}
}

// findProc is the pid of the one process whose command line holds every one of parts.
func findProc(t *testing.T, parts ...string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		var found []int
		for _, p := range procs {
			data, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			ok := true
			for _, part := range parts {
				ok = ok && strings.Contains(string(data), part)
			}
			if ok {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				found = append(found, pid)
			}
		}
		if len(found) == 1 {
			return found[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes with %q: %v, want one", parts, found)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Without the instance's ControlMaster, the command runs on a connection of our own, PTY
// included.
func TestShellWithoutControlMaster(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n"})
	discardOnCleanup(t, dir)
	if _, stderr, code := mcpShell(t, dir, nil, instanceName, "--", "true"); code != 0 {
		t.Fatalf("staging: exit %d\n%s", code, stderr)
	}
	sock := filepath.Join(vm.LimaHome, instanceName, "ssh.sock")
	kept := sock + ".kept-by-test"
	mustT(t, os.Rename(sock, kept))
	t.Cleanup(func() {
		_ = os.Remove(sock)
		if err := os.Rename(kept, sock); err != nil {
			t.Errorf("putting the instance's ssh.sock back: %v", err)
		}
	})
	stdout, stderr, code := mcpShell(t, dir, []string{"LIMACTL_MCP_DEBUG=1"}, "--yes", instanceName, "--", "sh", "-c", "echo direct > a.txt; pwd; exit 4")
	if code != 4 || stdout != dir+"\n" {
		t.Errorf("exit %d stdout %q\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "via=ssh") {
		t.Errorf("the command did not go on a connection of our own:\n%s", stderr)
	}
	if got := readHost(t, filepath.Join(dir, "a.txt")); got != "direct\n" {
		t.Errorf("a.txt: %q", got)
	}
	s := tmuxShell(t, dir, 90, 20, nil, "--no-review", instanceName, "--", "sh", "-c", `echo "SIZE=$(stty size) TTY=$(tty)"`)
	scr := s.WaitFor(2*time.Minute, "SIZE=20 90 TTY=/dev/pts/", "EXIT=0", "END")
	if !strings.Contains(scr, "MODES: icanon echo END") {
		t.Errorf("the terminal is not back in cooked mode:\n%s", scr)
	}
}

// shell starts without a limactl process when the instance is as the last look-up saw it
// (instance.InspectCached), and asks limactl again once what the answer depends on changed.
func TestShellInstanceCache(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n"})
	discardOnCleanup(t, dir)
	// A limactl that notes each call and runs the real one.
	wrapDir, err := os.MkdirTemp("", "limactl-wrap-")
	mustT(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(wrapDir) })
	mustT(t, os.Chmod(wrapDir, 0o755))
	calls := filepath.Join(wrapDir, "calls")
	mustT(t, os.WriteFile(calls, nil, 0o666))
	mustT(t, os.Chmod(calls, 0o666))
	real := filepath.Join(vm.KitDir, "prefix/bin/limactl")
	wrapper := filepath.Join(wrapDir, "limactl")
	mustT(t, os.WriteFile(wrapper, []byte("#!/bin/sh\necho \"$*\" >> "+shq(calls)+"\nexec "+shq(real)+" \"$@\"\n"), 0o755))
	env := []string{"LIMACTL=" + wrapper}
	lists := func() int {
		data, _ := os.ReadFile(calls)
		return strings.Count(string(data), "list --json "+instanceName)
	}
	cache := filepath.Join(vm.LimaHome, instanceName, "limactl-mcp", "instance.json")
	_ = os.Remove(cache)
	for i, want := range []int{1, 1, 1} {
		if _, stderr, code := mcpShell(t, dir, env, instanceName, "--", "true"); code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, code, stderr)
		}
		if got := lists(); got != want {
			t.Errorf("after run %d: %d calls of `limactl list`, want %d", i, got, want)
		}
	}
	// The instance's lima.yaml changed (limactl edit): ask limactl again.
	yaml := filepath.Join(vm.LimaHome, instanceName, "lima.yaml")
	st, err := os.Stat(yaml)
	mustT(t, err)
	mustT(t, os.Chtimes(yaml, st.ModTime(), st.ModTime().Add(time.Second)))
	t.Cleanup(func() { _ = os.Chtimes(yaml, st.ModTime(), st.ModTime()) })
	if _, stderr, code := mcpShell(t, dir, env, instanceName, "--", "true"); code != 0 || lists() != 2 {
		t.Errorf("after lima.yaml changed: exit %d, %d calls of `limactl list`, want 2\n%s", code, lists(), stderr)
	}
}
