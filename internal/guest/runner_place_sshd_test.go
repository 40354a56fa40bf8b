package guest

import (
	"context"
	"log/slog"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerbin"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// rootOwned is what lets a start skip reading the runner back: it must say yes only for a file
// that no one but root can have changed, on any path above it. The sshd's user is not root;
// the test (root) makes the shapes on the same filesystem.
func TestRootOwnedRunner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test makes root-owned files: run it as root (CI does)")
	}
	srv, _, l := sshdLink(t)
	ctx := context.Background()
	u, err := user.Lookup(srv.User)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)

	// /var/lib is root's and 0755 all the way up (unlike /tmp or /var/tmp, which are 1777).
	base, err := os.MkdirTemp("/var/lib", "limactl-mcp-rootowned-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	content := []byte("#!/bin/sh\necho runner\n")
	size := int64(len(content))
	type shape struct {
		name  string
		setup func(dir, exe string)
		want  bool
	}
	shapes := []shape{
		{"root's, 0755 all the way", func(dir, exe string) {}, true},
		{"file 0775", func(dir, exe string) { must(t, os.Chmod(exe, 0o775)) }, false},
		{"file 0757", func(dir, exe string) { must(t, os.Chmod(exe, 0o757)) }, false},
		{"file not executable", func(dir, exe string) { must(t, os.Chmod(exe, 0o644)) }, false},
		{"file the user's", func(dir, exe string) { must(t, os.Chown(exe, uid, 0)) }, false},
		{"directory 0775", func(dir, exe string) { must(t, os.Chmod(dir, 0o775)) }, false},
		{"directory 1777", func(dir, exe string) { must(t, os.Chmod(dir, 0o1777)) }, false},
		{"directory the user's", func(dir, exe string) { must(t, os.Chown(dir, uid, 0)) }, false},
		{"file a symlink to root's file", func(dir, exe string) {
			must(t, os.Rename(exe, exe+".real"))
			must(t, os.Symlink(exe+".real", exe))
		}, false},
		{"directory a symlink", func(dir, exe string) {
			must(t, os.Rename(dir, dir+".real"))
			must(t, os.Symlink(dir+".real", dir))
		}, false},
		{"other size", func(dir, exe string) { must(t, os.WriteFile(exe, append(content, 'x'), 0o755)) }, false},
		{"a directory, not a file", func(dir, exe string) {
			must(t, os.Remove(exe))
			must(t, os.Mkdir(exe, 0o755))
		}, false},
		{"missing", func(dir, exe string) { must(t, os.Remove(exe)) }, false},
	}
	for i, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			dir := filepath.Join(base, strconv.Itoa(i), "libexec")
			must(t, os.MkdirAll(dir, 0o755))
			must(t, os.Chmod(filepath.Dir(dir), 0o755))
			exe := filepath.Join(dir, "runner-x")
			must(t, os.WriteFile(exe, content, 0o755))
			s.setup(dir, exe)
			got, err := rootOwned(ctx, l, exe, size)
			if err != nil {
				t.Fatal(err)
			}
			if got != s.want {
				t.Errorf("rootOwned = %v, want %v", got, s.want)
			}
		})
	}
	// Not a clean absolute path: never.
	for _, p := range []string{"runner-x", base + "/0/libexec/../libexec/runner-x"} {
		if got, _ := rootOwned(ctx, l, p, size); got {
			t.Errorf("rootOwned(%q) = true", p)
		}
	}
}

// A guest without passwordless sudo (this host has no sudo at all) keeps the user's copy, and
// says so once: later starts do not try again.
func TestSystemRunnerWithoutSudo(t *testing.T) {
	srv, c, l := sshdLink(t)
	ctx := context.Background()
	_, id, err := runnerbin.Binary(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	marker := path.Join(srv.Home, runnerDir, noSystemRunner)
	_ = os.Remove(marker)
	img, err := embeddedRunner(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	exe, ok, err := systemRunner(ctx, l, c.log, img, func() (string, error) { return l.home, nil })
	if err != nil || ok {
		t.Fatalf("systemRunner without sudo = %q, %v, %v; want not ok, no error", exe, ok, err)
	}
	if _, err := os.Stat(exe); err == nil {
		t.Fatalf("%s exists after an install that cannot have worked", exe)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no marker after the failed install: %v", err)
	}
	// A runner started now is the user's copy, and works.
	c2 := New(func(context.Context) (*sshlink.Target, error) { return target(srv), nil }, Options{NoLoginShell: true, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { c2.Close() })
	res, err := c2.Exec(ctx, ExecRequest{Argv: []string{"sh", "-c", "readlink /proc/$PPID/exe"}, Dir: "/", HeadBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if want := path.Join(srv.Home, runnerDir, "runner-"+id) + "\n"; string(res.Stdout.Head) != want {
		t.Errorf("the runner runs from %q (stderr %q), want %q", res.Stdout.Head, res.Stderr.Head, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sshdLink is a connection without a runner to a real sshd, and its link.
func sshdLink(t *testing.T) (*sshd.Server, *Conn, *link) {
	t.Helper()
	srv := sshd.Start(t)
	c := New(func(context.Context) (*sshlink.Target, error) { return target(srv), nil }, Options{NoRunner: true, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { c.Close() })
	l, err := c.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, l
}
