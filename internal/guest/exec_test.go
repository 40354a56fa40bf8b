package guest_test

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// modes runs a test with commands through the runner and through one ssh session each.
func modes(t *testing.T, f func(t *testing.T, srv *sshd.Server, c *guest.Conn)) {
	srv := sshd.Start(t)
	for _, noRunner := range []bool{false, true} {
		name := "runner"
		if noRunner {
			name = "session"
		}
		t.Run(name, func(t *testing.T) {
			c := guesttest.Connect(t, srv, guest.Options{NoRunner: noRunner})
			uses, err := c.UsesRunner(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if uses == noRunner {
				t.Fatalf("UsesRunner = %v with NoRunner = %v", uses, noRunner)
			}
			f(t, srv, c)
		})
	}
}

func run(t *testing.T, c *guest.Conn, dir string, argv ...string) *runnerproto.ExecResult {
	t.Helper()
	r, err := c.Exec(context.Background(), guest.ExecRequest{Argv: argv, Dir: dir, Timeout: time.Minute, HeadBytes: 1 << 20, TailBytes: 1 << 16})
	if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	return r
}

func out(r *runnerproto.ExecResult) (string, string) {
	return string(r.Stdout.Head) + string(r.Stdout.Tail), string(r.Stderr.Head) + string(r.Stderr.Tail)
}

func TestExecBasics(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		r := run(t, c, "/etc", "cat", "hostname")
		stdout, stderr := out(r)
		if r.ExitCode != 0 || stdout == "" || stderr != "" {
			t.Errorf("cat hostname: exit %d stdout %q stderr %q", r.ExitCode, stdout, stderr)
		}
		r = run(t, c, "/", "bash", "-c", "echo NO>&2; exit 13")
		stdout, stderr = out(r)
		if r.ExitCode != 13 || stdout != "" || stderr != "NO\n" {
			t.Errorf("exit 13: exit %d stdout %q stderr %q", r.ExitCode, stdout, stderr)
		}
		r = run(t, c, "/", "pwd")
		if stdout, _ = out(r); stdout != "/\n" {
			t.Errorf("pwd in /: %q", stdout)
		}
		r = run(t, c, srv.Home, "pwd")
		if stdout, _ = out(r); stdout != srv.Home+"\n" {
			t.Errorf("pwd in home: %q", stdout)
		}
	})
}

func TestExecQuotingAndEnv(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		awkward := []string{"printf", "[%s]\\n", "a b", "'q'", `"dq"`, "$HOME", "*", "`id`", "x;y", "new\nline", "ünï💡"}
		r := run(t, c, "/", awkward...)
		stdout, _ := out(r)
		want := "[a b]\n['q']\n[\"dq\"]\n[$HOME]\n[*]\n[`id`]\n[x;y]\n[new\nline]\n[ünï💡]\n"
		if stdout != want {
			t.Errorf("quoting: got %q want %q", stdout, want)
		}
		r = run(t, c, "/", "FOO=bar baz", "BAR=2", "sh", "-c", `echo "$FOO/$BAR"`)
		if stdout, _ = out(r); stdout != "bar baz/2\n" {
			t.Errorf("env words: %q", stdout)
		}
		// A shell builtin works as in `limactl shell`.
		r = run(t, c, "/", "cd", "/tmp")
		if r.ExitCode != 0 {
			t.Errorf("builtin cd: exit %d", r.ExitCode)
		}
		r = run(t, c, "/", "no-such-command-xyz")
		_, stderr := out(r)
		if r.ExitCode != 127 || !strings.Contains(stderr, "not found") {
			t.Errorf("missing command: exit %d stderr %q", r.ExitCode, stderr)
		}
	})
}

func TestExecLoginEnvironment(t *testing.T) {
	srv := sshd.Start(t)
	// A program that only the login profile puts on PATH.
	srv.Run(t, "mkdir", "-p", srv.Home+"/profile-bin")
	srv.Run(t, "sh", "-c", `printf '#!/bin/sh\necho from-profile\n' > "$HOME/profile-bin/only-in-profile" && chmod +x "$HOME/profile-bin/only-in-profile"`)
	srv.Run(t, "sh", "-c", `grep -q profile-bin "$HOME/.profile" 2>/dev/null || echo 'PATH="$HOME/profile-bin:$PATH"; [ -e "$HOME/.chatter" ] && echo "profile chatter on stdout"' >> "$HOME/.profile"`)
	// A profile that prints on stdout must not confuse the runner's protocol.
	srv.Run(t, "touch", srv.Home+"/.chatter")
	defer srv.Run(t, "rm", "-f", srv.Home+"/.chatter")
	for _, noRunner := range []bool{false, true} {
		c := guesttest.Connect(t, srv, guest.Options{NoRunner: noRunner})
		r := run(t, c, "/", "only-in-profile")
		stdout, stderr := out(r)
		want := "from-profile\n"
		if noRunner {
			want = "profile chatter on stdout\n" + want // as `limactl shell` shows it
		}
		if r.ExitCode != 0 || stdout != want {
			t.Errorf("noRunner=%v: exit %d stdout %q stderr %q", noRunner, r.ExitCode, stdout, stderr)
		}
	}
}

func TestExecMissingDirectory(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		r := run(t, c, "/etcetera", "cat", "os-release")
		_, stderr := out(r)
		if r.ExitCode != 1 || !strings.Contains(stderr, "No such file or directory") {
			t.Errorf("exit %d stderr %q", r.ExitCode, stderr)
		}
	})
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		marker := fmt.Sprintf("/tmp/limactl-mcp-orphan-%d", time.Now().UnixNano())
		start := time.Now()
		// The child outlives the shell unless the whole group is killed.
		r, err := c.Exec(context.Background(), guest.ExecRequest{
			Argv: []string{"bash", "-c", "(sleep 3; touch " + marker + ") & echo started; sleep 30"},
			Dir:  "/", Timeout: 1500 * time.Millisecond, HeadBytes: 4096, TailBytes: 4096,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !r.TimedOut || r.Signal != "SIGKILL" {
			t.Errorf("TimedOut %v Signal %q exit %d", r.TimedOut, r.Signal, r.ExitCode)
		}
		if stdout, _ := out(r); stdout != "started\n" {
			t.Errorf("stdout %q", stdout)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
		time.Sleep(3 * time.Second)
		if r := run(t, c, "/", "test", "-e", marker); r.ExitCode == 0 {
			if strings.HasSuffix(t.Name(), "session") {
				t.Log("one ssh session per command cannot kill the process group (documented)")
			} else {
				t.Errorf("the background child survived the timeout")
			}
		}
	})
}

func TestExecCancel(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.Exec(ctx, guest.ExecRequest{Argv: []string{"sleep", "30"}, Dir: "/", HeadBytes: 10, TailBytes: 10})
		if err == nil {
			t.Fatal("want the context's error")
		}
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("cancel took %v", d)
		}
		// The connection still works.
		if r := run(t, c, "/", "true"); r.ExitCode != 0 {
			t.Errorf("after cancel: exit %d", r.ExitCode)
		}
	})
}

func TestExecOutputLimits(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		r, err := c.Exec(context.Background(), guest.ExecRequest{
			Argv: []string{"sh", "-c", "echo BEGIN; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo END"},
			Dir:  "/", HeadBytes: 100, TailBytes: 50, Timeout: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		o := r.Stdout
		if o.Total != 3000011 || len(o.Head) != 100 || len(o.Tail) != 50 || !strings.HasPrefix(string(o.Head), "BEGIN\nxxx") || !strings.HasSuffix(string(o.Tail), "xxx\nEND\n") {
			t.Errorf("total %d head %d %q tail %d %q", o.Total, len(o.Head), o.Head[:10], len(o.Tail), o.Tail)
		}
	})
}

func TestExecSignal(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		r := run(t, c, "/", "sh", "-c", "kill -TERM $$")
		if r.Signal != "SIGTERM" {
			t.Errorf("signal %q exit %d", r.Signal, r.ExitCode)
		}
	})
}

func TestExecConcurrent(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := c.Exec(context.Background(), guest.ExecRequest{Argv: []string{"sh", "-c", fmt.Sprintf("sleep 0.%d; echo %d", i%5, i)}, Dir: "/", HeadBytes: 100, Timeout: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if got := string(r.Stdout.Head); got != fmt.Sprintf("%d\n", i) {
					errs <- fmt.Errorf("call %d got %q", i, got)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

func TestExecBackgroundProcessDoesNotHang(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		if strings.HasSuffix(t.Name(), "session") {
			t.Skip("like `limactl shell`, an ssh session waits for every holder of its output")
		}
		start := time.Now()
		r := run(t, c, "/", "sh", "-c", "sleep 20 & echo bg")
		if stdout, _ := out(r); stdout != "bg\n" || time.Since(start) > 5*time.Second {
			t.Errorf("stdout %q after %v", stdout, time.Since(start))
		}
		if len(r.HeldBy) != 1 || !strings.Contains(r.HeldBy[0], "sleep 20") {
			t.Errorf("the process holding the output is not named: %q", r.HeldBy)
		}
	})
}

func TestReconnectAfterServerRestart(t *testing.T) {
	srv := sshd.Start(t)
	c := guesttest.Connect(t, srv, guest.Options{KeepaliveInterval: 200 * time.Millisecond})
	before, _ := out(run(t, c, "/", "sh", "-c", "echo $PPID"))
	// Kill the connection from the guest side, as a VM restart does: this connection's runner
	// and the sshd process serving it (only these: tests of other packages share the user).
	runner := strings.TrimSpace(before)
	srv.Run(t, "sh", "-c", "s=$(ps -o ppid= -p "+runner+" | tr -d ' '); kill -9 "+runner+"; [ -n \"$s\" ] && kill $s; true")
	time.Sleep(time.Second)
	var r *runnerproto.ExecResult
	var err error
	for range 3 { // the call right after the break may report it; the next one reconnects
		r, err = c.Exec(context.Background(), guest.ExecRequest{Argv: []string{"echo", "back"}, Dir: "/", HeadBytes: 100, Timeout: time.Minute})
		if err == nil {
			break
		}
		t.Logf("call after the break: %v", err)
	}
	if err != nil || string(r.Stdout.Head) != "back\n" {
		t.Fatalf("no reconnect: %v", err)
	}
	// The runner (the parent of each command) is a new one.
	if after, _ := out(run(t, c, "/", "sh", "-c", "echo $PPID")); after == before {
		t.Errorf("same runner %s before and after the break: nothing was broken", after)
	}
}

func TestGlobAndGrep(t *testing.T) {
	srv := sshd.Start(t)
	c := guesttest.Connect(t, srv, guest.Options{})
	dir := path.Join(srv.Home, fmt.Sprintf("globtest-%d", time.Now().UnixNano()))
	srv.Run(t, "sh", "-c", "mkdir -p "+dir+"/a/b && echo 'hello 💡' > "+dir+"/a/b/x.go && echo hello > "+dir+"/top.go && echo nothing > "+dir+"/a/y.txt")
	g, err := c.Glob(context.Background(), dir, "**/*.go", 100)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(g.Matches, ",") != dir+"/a/b/x.go,"+dir+"/top.go" {
		t.Errorf("glob: %q", g.Matches)
	}
}
