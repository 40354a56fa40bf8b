package shellcmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The script, run by a real sh: the directory, the environment (values with quotes and
// newlines, read from the file of values, which is then gone), the command's words and its
// exit status; the values are exported to the command alone (not to what runs after it).
func TestCommandScript(t *testing.T) {
	dir := t.TempDir()
	env := []string{"V=a'b\"c\nd", "W=$(touch " + dir + "/injected)`x`"}
	p := dir + "/.cache/limactl-mcp/env.abcdef1234/env"
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, envFileContent(env), 0o600); err != nil {
		t.Fatal(err)
	}
	script := envReadScript(p) + commandScript(dir, "/bin/sh", []string{"sh", "-c", `printf '%s|%s|%s|%s\n' "$(pwd)" "$V" "$W" "$1"; exit 4`, "x", "it's a word"}, env, false, `echo "after:${V-unset}"`+"\n", "")
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("exit: %v (want 4); output %q", err, out)
	}
	if want := dir + "|a'b\"c\nd|$(touch " + dir + "/injected)`x`|it's a word\nafter:unset\n"; string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if _, err := os.Stat(filepath.Dir(p)); !os.IsNotExist(err) {
		t.Errorf("the file of values is still there: %v", err)
	}
	if _, err := os.Stat(dir + "/injected"); !os.IsNotExist(err) {
		t.Errorf("a value ran as code: %v", err)
	}
	if strings.Contains(script, "a'b") || strings.Contains(script, "touch") {
		t.Errorf("a value is in the script (a command line):\n%s", script)
	}
	if !strings.Contains(commandScript(dir, "", nil, nil, true, "", ""), `exec "$SHELL" -l`) {
		t.Error("without a command, the script does not exec a login shell")
	}

	// Without a terminal, the values come first on the standard input; the rest is the
	// command's.
	for _, sh := range []string{"/bin/sh", "bash"} {
		end := "__lmcp_env_end_x1"
		cmd = exec.Command(sh, "-c", envStdinScript(end)+commandScript(dir, "/bin/sh", []string{"sh", "-c", `printf '%s|%s|' "$V" "$W"; cat`}, env, false, `echo "after:${V-unset}"`+"\n", ""))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
		cmd.Stdin = strings.NewReader(string(envStdinContent(env, end)) + "the command's input\n")
		out, err = cmd.Output()
		if want := "a'b\"c\nd|$(touch " + dir + "/injected)`x`|the command's input\nafter:unset\n"; err != nil || string(out) != want {
			t.Errorf("%s, values on stdin: %v: output %q, want %q", sh, err, out, want)
		}
	}
	if _, err := os.Stat(dir + "/injected"); !os.IsNotExist(err) {
		t.Errorf("a value ran as code: %v", err)
	}

	// Without its file, the command does not run.
	cmd = exec.Command("/bin/sh", "-c", envReadScript(p)+commandScript(dir, "/bin/sh", []string{"echo", "RAN"}, env, false, "", ""))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	out, err = cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "RAN") || !strings.Contains(string(out), "did not reach the guest") {
		t.Errorf("without the file: %v %q", err, out)
	}
}

// The file of values: made 0600 in a new 0700 directory of a 0700 store by the write script,
// from its standard input; its path is checked.
func TestEnvWriteScript(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", envWriteScript(envDirName()))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	cmd.Stdin = strings.NewReader("x='a\\b  c\n d'\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseEnvFilePath(string(out))
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]os.FileMode{p: 0o600, filepath.Dir(p): 0o700, filepath.Dir(filepath.Dir(p)): 0o700} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", f, fi.Mode(), err, want)
		}
	}
	if data, _ := os.ReadFile(p); string(data) != "x='a\\b  c\n d'\n" {
		t.Errorf("content %q", data)
	}
	for _, bad := range []string{"", "/tmp/x", "relative/.cache/limactl-mcp/env.abcdef/env", "/h/.cache/limactl-mcp/env.abcdef/env\n/x", "/h/../.cache/limactl-mcp/env.abcdef/env", "/h/.cache/limactl-mcp/env.ab/env"} {
		if _, err := parseEnvFilePath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
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
