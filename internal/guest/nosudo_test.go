package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// orNoSudo's three outcomes, with sh and a sudo on PATH that has the two behaviours of a real
// one: passwordless (runs the command) or not (fails at once, as `sudo -n` does). The command
// runs once when sudo works; "no sudo" is told apart from the command's own failure; and the
// setup does not ask sudo a second time when the first succeeds.
func TestOrNoSudo(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sudoWorks bool
		command   string
		wantExit  int
		wantOut   string
		wantSudos int
	}{
		{"sudo works, the command succeeds", true, "echo done", 0, "done\n", 1},
		{"sudo works, the command fails with its status", true, "exit 3", 3, "", 2},
		{"no passwordless sudo", false, "echo never", 97, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			count := filepath.Join(t.TempDir(), "sudos")
			sudo := "#!/bin/sh\necho x >> " + count + "\n"
			if tc.sudoWorks {
				sudo += "[ \"$1\" = -n ] && shift\nexec \"$@\"\n"
			} else {
				sudo += "echo 'sudo: a password is required' >&2\nexit 1\n"
			}
			if err := os.WriteFile(filepath.Join(bin, "sudo"), []byte(sudo), 0o755); err != nil {
				t.Fatal(err)
			}
			script := "set -e\nout=$(sudo -n sh -c '" + tc.command + "')" + orNoSudo + "\nprintf '%s\\n' \"$out\"\n"
			cmd := exec.Command("sh", "-c", script)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			out, err := cmd.Output()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantExit || (tc.wantExit == 0 && string(out) != tc.wantOut) {
				t.Errorf("exit %d, output %q; want exit %d, %q", code, out, tc.wantExit, tc.wantOut)
			}
			data, _ := os.ReadFile(count)
			if n := strings.Count(string(data), "x"); n != tc.wantSudos {
				t.Errorf("sudo ran %d times, want %d", n, tc.wantSudos)
			}
		})
	}
}
