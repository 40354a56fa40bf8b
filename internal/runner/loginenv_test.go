package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// TestLoginEnvironment: `serve --login` gives commands what the user's login shell adds and
// removes, without being started through one; it remembers that and uses it at once while the
// files a login shell reads are unchanged, and a login shell in the background still catches a
// change those files do not show. Each runner process gets a home of its own (its ~/.profile,
// read by sh as a login shell) and sshd-like environment.
func TestLoginEnvironment(t *testing.T) {
	for _, kind := range runnerKinds[1:] {
		t.Run(kind, func(t *testing.T) {
			home := t.TempDir()
			write := func(name, content string) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(filepath.Join(home, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(home, name), []byte(content), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write("bin1/tool1", "#!/bin/sh\necho tool1\n")
			write(".extra", "EXTRA=a; export EXTRA\n")
			profile := func(from string) string {
				return `PATH="$HOME/bin1:$PATH"; export PATH
FROM_PROFILE=` + from + `; export FROM_PROFILE
unset DROPME
. "$HOME/.extra"
echo "profile chatter on stdout"
`
			}
			write(".profile", profile("one"))
			env := []string{"HOME=" + home, "SHELL=/bin/sh", "PATH=/usr/bin:/bin", "USER=test", "DROPME=x", "LANG=C"}
			start := func() *testRunner {
				return startRunnerWith(t, kind, runnerOpts{env: env, login: true})
			}
			probe := `echo "$FROM_PROFILE|$EXTRA|${DROPME-unset}|$(command -v tool1)"`
			see := func(r *testRunner) string {
				t.Helper()
				res := r.exec(t, &runnerproto.ExecRequest{Argv: []string{"sh", "-c", probe}, Dir: "/", HeadBytes: 4096})
				if res.ExitCode != 0 {
					t.Fatalf("probe: exit %d, stderr %q", res.ExitCode, res.Stderr.Head)
				}
				return strings.TrimSpace(string(res.Stdout.Head))
			}
			// A program found on the login PATH runs by name too (the runner's own lookup).
			tool := func(r *testRunner) {
				t.Helper()
				res := r.exec(t, &runnerproto.ExecRequest{Argv: []string{"tool1"}, Dir: "/", HeadBytes: 4096})
				if string(res.Stdout.Head) != "tool1\n" {
					t.Errorf("tool1 by name: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout.Head, res.Stderr.Head)
				}
			}
			want1 := "one|a|unset|" + home + "/bin1/tool1"

			// The first runner has nothing remembered: its commands wait for the login shell.
			r := start()
			if r.hello.LoginEnv != "" {
				t.Errorf("first runner: login_env %q, want \"\" (a login shell is running)", r.hello.LoginEnv)
			}
			if got := see(r); got != want1 {
				t.Errorf("first runner sees %q, want %q", got, want1)
			}
			tool(r)
			cache := filepath.Join(home, ".cache/limactl-mcp/login-env.json")
			if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the delta is not remembered in %s (0600): %v %v", cache, fi, err)
			}

			// What is remembered is in a file the agent can write: garbage, an oversized file
			// or a delta under another key is not used (a login shell runs), and is replaced.
			for name, content := range map[string]string{
				"garbage":   "{not json",
				"oversized": `{"key":"` + strings.Repeat("x", 2<<20) + `"}`,
				"other key": `{"key":"0000","set":{"FROM_PROFILE":"forged"}}`,
			} {
				if err := os.WriteFile(cache, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				r = start()
				// Not "cached": "" while the login shell runs, or "login" when it finished before
				// the hello (an emulated runner is slower than the native shell).
				if r.hello.LoginEnv == "cached" {
					t.Errorf("%s in the remembered delta: login_env %q, want it not used", name, r.hello.LoginEnv)
				}
				if got := see(r); got != want1 {
					t.Errorf("%s in the remembered delta: sees %q, want %q", name, got, want1)
				}
			}

			// The next one uses what is remembered, at once, and sees the same.
			r = start()
			if r.hello.LoginEnv != "cached" {
				t.Errorf("second runner: login_env %q, want cached", r.hello.LoginEnv)
			}
			if got := see(r); got != want1 {
				t.Errorf("second runner sees %q, want %q", got, want1)
			}
			tool(r)

			// ~/.profile changed: what is remembered no longer counts.
			time.Sleep(10 * time.Millisecond) // a new mtime even on a coarse clock
			write(".profile", profile("two"))
			r = start()
			if r.hello.LoginEnv != "" {
				t.Errorf("after ~/.profile changed: login_env %q, want \"\"", r.hello.LoginEnv)
			}
			if got, want := see(r), "two|a|unset|"+home+"/bin1/tool1"; got != want {
				t.Errorf("after ~/.profile changed, sees %q, want %q", got, want)
			}

			// A file the profile sources changed: the remembered delta is used at first, the
			// login shell in the background brings the change to the commands after it.
			write(".extra", "EXTRA=b; export EXTRA\n")
			r = start()
			if r.hello.LoginEnv != "cached" {
				t.Errorf("after ~/.extra changed: login_env %q, want cached (the key does not see it)", r.hello.LoginEnv)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				got := see(r)
				if got == "two|b|unset|"+home+"/bin1/tool1" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after ~/.extra changed, still sees %q after 30 s", got)
				}
				time.Sleep(50 * time.Millisecond)
			}

			// A profile that fails: commands still run, with the environment sshd gave.
			write(".profile", "exit 3\n")
			r = start()
			if got := see(r); got != "||x|" {
				t.Errorf("with a failing profile, sees %q, want sshd's environment", got)
			}
			// The runner says so on its stderr before it lets the command run, but the bytes
			// reach this buffer through exec's copying goroutine: wait for them (bounded).
			said := time.Now().Add(30 * time.Second)
			for !strings.Contains(r.stderr.String(), "login shell's environment is unavailable") {
				if time.Now().After(said) {
					t.Errorf("the runner did not say why its commands lack the login environment: %q", r.stderr.String())
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
