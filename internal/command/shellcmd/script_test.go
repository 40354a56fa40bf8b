package shellcmd

import (
	"os/exec"
	"strings"
	"testing"
)

// The script, run by a real sh: the directory, the environment (values with quotes and
// newlines), the command's words and its exit status.
func TestCommandScript(t *testing.T) {
	dir := t.TempDir()
	script := commandScript(dir, "/bin/sh", []string{"sh", "-c", `printf '%s|%s|%s\n' "$(pwd)" "$V" "$1"; exit 4`, "x", "it's a word"}, []string{"V=a'b\"c\nd"}, false, "echo after\n")
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("exit: %v (want 4); output %q", err, out)
	}
	if want := dir + "|a'b\"c\nd|it's a word\nafter\n"; string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if !strings.Contains(commandScript(dir, "", nil, nil, true, ""), `exec "$SHELL" -l`) {
		t.Error("without a command, the script does not exec a login shell")
	}
}

// A TERM the guest has no terminfo for becomes one it has.
func TestTermFallback(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", termFallback+`echo "TERM=$TERM"`)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "TERM=no-such-terminal-x"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "no terminfo for TERM=no-such-terminal-x; using TERM=xterm-256color") || !strings.HasSuffix(string(out), "TERM=xterm-256color\n") {
		t.Errorf("output %q", out)
	}
}
