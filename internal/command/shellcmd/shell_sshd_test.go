package shellcmd_test

import (
	"context"
	"log/slog"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/lima-vm/lima/v2/pkg/limatype"

	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/command/shellcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/terminal"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// run runs shell on the fixture's session (the sshd stands in for the guest; no terminal),
// with the host environment env, and returns stdout, stderr and the exit code.
func run(t *testing.T, f *sessiontest.Fixture, env map[string]string, opts shellcmd.Options) (string, string, int) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	opts.IO, opts.Instance, opts.Open = ios, sessiontest.Instance, f.Opener()
	if opts.Workdir == "" {
		opts.Workdir = f.Workdir
	}
	opts.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	opts.Terminal = func(*instance.Instance, *slog.Logger) (*terminal.Terminal, error) {
		return terminal.Open(guesttest.Target(f.Srv), nil), nil
	}
	err := shellcmd.Run(context.Background(), &opts)
	if err != nil && !strings.Contains(err.Error(), exitcode.ErrSilent.Error()) {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exitcode.Of(err)
}

// The command runs in the staged copy; its exit status is ours; without a terminal and without
// --yes nothing is written and stderr has the summary and the review command; stdout is the
// command's alone.
func TestShellRunWithoutTerminal(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	stdout, stderr, code := run(t, f, nil, shellcmd.Options{Command: []string{"sh", "-c", "pwd; echo guest > a.txt; exit 3"}})
	if code != 3 {
		t.Errorf("exit %d, want the command's 3\n%s", code, stderr)
	}
	if stdout != f.GuestPath+"\n" {
		t.Errorf("stdout %q, want the guest copy's path alone", stdout)
	}
	for _, want := range []string{"resuming the staged copy of " + f.Workdir, "a.txt", "limactl mcp review " + sessiontest.Instance} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if got := f.ReadHost("a.txt"); got != "a\n" {
		t.Errorf("a.txt written without consent: %q", got)
	}

	// --yes applies, and says so on stderr.
	stdout, stderr, code = run(t, f, nil, shellcmd.Options{Yes: true, Command: []string{"sh", "-c", "echo yes > b.txt"}})
	if code != 0 || stdout != "" || !strings.Contains(stderr, "Applied: 2 paths written") {
		t.Errorf("--yes: exit %d stdout %q\n%s", code, stdout, stderr)
	}
	if f.ReadHost("a.txt") != "guest\n" || f.ReadHost("b.txt") != "yes\n" {
		t.Errorf("after --yes: a.txt %q b.txt %q", f.ReadHost("a.txt"), f.ReadHost("b.txt"))
	}

	// Nothing changed while the command ran: no review. (The probe counts changes from up to
	// 2 s before the command's start: the edits above must be older than that.)
	time.Sleep(2500 * time.Millisecond)
	_, stderr, code = run(t, f, nil, shellcmd.Options{Command: []string{"true"}})
	if code != 0 || !strings.Contains(stderr, "the command changed nothing") {
		t.Errorf("-- true: exit %d\n%s", code, stderr)
	}

	// --no-review leaves the change pending.
	_, stderr, code = run(t, f, nil, shellcmd.Options{NoReview: true, Command: []string{"sh", "-c", "echo later > c.txt; kill -TERM $$"}})
	if code != 143 || !strings.Contains(stderr, "stay pending") || f.ReadHost("c.txt") != "<missing>" {
		t.Errorf("--no-review: exit %d (want 143), c.txt %q\n%s", code, f.ReadHost("c.txt"), stderr)
	}
}

// Only what is named reaches the guest; a name unset on the host is an error that says how to
// give a value.
func TestShellRunEnv(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	env := map[string]string{"NAMED": "v1", "NOT_NAMED": "leak", "OPENAI_API_KEY": "sk-o", "GEMINI_API_KEY": "g'k \"x\"\n2"}
	script := `echo "named=${NAMED-unset} not=${NOT_NAMED-unset} given=${GIVEN-unset} openai=${OPENAI_API_KEY-unset} gemini=${GEMINI_API_KEY-unset}"`
	stdout, stderr, code := run(t, f, env, shellcmd.Options{Env: []string{"NAMED", "GIVEN=a b"}, Command: []string{"sh", "-c", script}})
	if want := "named=v1 not=unset given=a b openai=unset gemini=unset\n"; code != 0 || stdout != want {
		t.Errorf("exit %d stdout %q, want %q\n%s", code, stdout, want, stderr)
	}
	if !strings.Contains(stderr, "passing NAMED, GIVEN to the guest") {
		t.Errorf("stderr does not name the variables:\n%s", stderr)
	}
	stdout, stderr, _ = run(t, f, env, shellcmd.Options{AgentEnv: true, Command: []string{"sh", "-c", script}})
	if want := "named=unset not=unset given=unset openai=sk-o gemini=g'k \"x\"\n2\n"; stdout != want {
		t.Errorf("--agent-env: stdout %q, want %q\n%s", stdout, want, stderr)
	}
	if !strings.Contains(stderr, "passing OPENAI_API_KEY, GEMINI_API_KEY to the guest") {
		t.Errorf("--agent-env: stderr\n%s", stderr)
	}
	for _, bad := range []string{"UNSET", "1X", "A-B=c"} {
		_, stderr, code = run(t, f, env, shellcmd.Options{Env: []string{bad}, Command: []string{"true"}})
		if code == 0 || !strings.Contains(stderr, "--env") {
			t.Errorf("--env %s: exit %d\n%s", bad, code, stderr)
		}
	}
}

// A guest copy that is gone (a recreated instance) is staged again, and the command then runs
// on it.
func TestShellRunRestagesAGoneCopy(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	id := staging.SessionID(f.Workdir)
	f.Srv.Run(t, "rm", "-f", path.Join(f.Srv.Home, ".cache", "limactl-mcp", "sessions", id))
	t.Cleanup(func() { f.Srv.Run(t, "bash", "-c", "rm -rf "+f.Srv.Home+"/"+staging.RelocatedDir+"/proj-"+id) })
	stdout, stderr, code := run(t, f, nil, shellcmd.Options{Command: []string{"cat", "a.txt"}})
	if code != 0 || stdout != "a\n" || !strings.Contains(stderr, "is gone from the guest; staging it again") {
		t.Errorf("exit %d stdout %q\n%s", code, stdout, stderr)
	}
}

// --sync brings host edits into a resumed copy before the command; --shell picks the shell;
// without a terminal and without a command, the login shell reads its commands from stdin.
func TestShellRunSyncShellStdin(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	f.WriteHost("a.txt", "host edit\n")
	stdout, stderr, code := run(t, f, nil, shellcmd.Options{Command: []string{"cat", "a.txt"}})
	if code != 0 || stdout != "a\n" || !strings.Contains(stderr, "--sync brings them in") {
		t.Errorf("without --sync: exit %d stdout %q\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = run(t, f, nil, shellcmd.Options{Sync: true, Command: []string{"cat", "a.txt"}})
	if code != 0 || stdout != "host edit\n" || !strings.Contains(stderr, "copied 1 host change into the guest") {
		t.Errorf("--sync: exit %d stdout %q\n%s", code, stdout, stderr)
	}
	fake := path.Dir(f.GuestPath) + "/fake shell"
	f.Srv.Run(t, "bash", "-c", "printf '#!/bin/sh\\necho \"fake shell $*\"\\n' > '"+fake+"' && chmod +x '"+fake+"'")
	stdout, stderr, code = run(t, f, nil, shellcmd.Options{Shell: fake, Command: []string{"make", "it's"}})
	if code != 0 || stdout != "fake shell -l -c make 'it'\\''s'\n" {
		t.Errorf("--shell /bin/sh: exit %d stdout %q\n%s", code, stdout, stderr)
	}

	ios, in, out, errOut := iostreams.Test()
	in.WriteString("echo from-stdin; pwd\nexit 6\n")
	opts := shellcmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener(),
		Terminal: func(*instance.Instance, *slog.Logger) (*terminal.Terminal, error) {
			return terminal.Open(guesttest.Target(f.Srv), nil), nil
		}}
	err := shellcmd.Run(context.Background(), &opts)
	if exitcode.Of(err) != 6 || out.String() != "from-stdin\n"+f.GuestPath+"\n" {
		t.Errorf("a login shell on stdin: exit %d stdout %q\n%s", exitcode.Of(err), out, errOut)
	}
}

// An instance that mounts host directories is refused before anything runs, with the command
// that does it Lima's way.
func TestShellRunRefusesMounts(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	open := f.Opener()
	ios, _, out, _ := iostreams.Test()
	opts := shellcmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Command: []string{"sh", "-c", "echo ran > ran.txt"},
		Open: func(ctx context.Context, name string) (*sessionopen.Target, error) {
			t, err := open(ctx, name)
			if err == nil {
				t.Instance.Config = &limatype.LimaYAML{Mounts: []limatype.Mount{{Location: "~"}}}
			}
			return t, err
		}}
	err := shellcmd.Run(context.Background(), &opts)
	if err == nil || !strings.Contains(err.Error(), "mounts host directories") || !strings.Contains(err.Error(), "limactl shell --workdir") {
		t.Fatalf("error %v", err)
	}
	if out.Len() != 0 || f.Guest("test -e ran.txt && echo ran || echo no") != "no\n" {
		t.Errorf("the command ran: stdout %q", out)
	}
}
