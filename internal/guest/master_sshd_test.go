package guest_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/terminal"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// startMaster starts an OpenSSH ControlMaster to srv, as Lima's host agent does for an
// instance, and returns its control socket; it is ended when the test ends.
func startMaster(t *testing.T, srv *sshd.Server) string {
	t.Helper()
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client")
	}
	dir, err := os.MkdirTemp("", "mcp-master-") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "ssh.sock")
	base := []string{"-F", "/dev/null", "-o", "ControlPath=" + sock, "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes",
		"-i", srv.ClientKeyPath, "-l", srv.User, "-p", strconv.Itoa(srv.Port), "127.0.0.1"}
	cmd := exec.Command("ssh", append([]string{"-M", "-f", "-N", "-o", "ControlPersist=yes", "-o", "LogLevel=ERROR"}, base...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starting a ControlMaster: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ssh", append([]string{"-O", "exit"}, base...)...).Run() })
	return sock
}

func masterTarget(srv *sshd.Server, sock string) sshlink.Resolver {
	return func(context.Context) (*sshlink.Target, error) {
		t := guesttest.Target(srv)
		t.ControlPath = sock
		return t, nil
	}
}

// Through a ControlMaster: commands, streams, file reads and writes work, the connection says
// it rides the master, and a master that goes away (the instance stopped) costs one call, after
// which the connection is made directly.
func TestControlMaster(t *testing.T) {
	srv := sshd.Start(t)
	sock := startMaster(t, srv)
	ctx := context.Background()
	c := guest.New(masterTarget(srv, sock), guest.Options{})
	defer c.Close()

	via, err := c.Via(ctx)
	if err != nil || via != sshlink.ViaControlMaster {
		t.Fatalf("Via = %q, %v; want %q", via, err, sshlink.ViaControlMaster)
	}
	home, err := c.Home(ctx)
	if err != nil || home != srv.Home {
		t.Fatalf("Home = %q, %v; want %q", home, err, srv.Home)
	}
	res, err := c.Exec(ctx, guest.ExecRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Dir: "/", HeadBytes: 1000, TailBytes: 1000})
	if err != nil || res.ExitCode != 3 || string(res.Stdout.Head) != "out\n" || string(res.Stderr.Head) != "err\n" {
		t.Fatalf("Exec = %+v, %v", res, err)
	}
	out, err := c.Stream(ctx, "cat; echo done", strings.NewReader("in\n"))
	if err != nil || string(out) != "in\ndone\n" {
		t.Fatalf("Stream = %q, %v", out, err)
	}
	if _, err := c.Stream(ctx, "exit 7", nil); err == nil {
		t.Fatal("Stream of a failing script: no error")
	}
	p := filepath.Join(srv.Home, "master-test.txt")
	if err := c.WriteFile(ctx, p, []byte("hello"), 0o644, false); err != nil {
		t.Fatal(err)
	}
	if data, err := c.ReadFile(ctx, p, 100); err != nil || string(data) != "hello" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	sc, err := c.SFTP(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := sc.Stat(p); err != nil || fi.Size() != 5 {
		t.Fatalf("sftp Stat = %v, %v", fi, err)
	}

	// The master goes away: the link notices, and the next connect goes direct.
	base := []string{"-F", "/dev/null", "-o", "ControlPath=" + sock, "-O", "exit", "127.0.0.1"}
	if out, err := exec.Command("ssh", base...).CombinedOutput(); err != nil {
		t.Fatalf("ssh -O exit: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Exec(ctx, guest.ExecRequest{Argv: []string{"true"}, Dir: "/"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call works after the master went away: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if via, err := c.Via(ctx); err != nil || via != sshlink.ViaSSH {
		t.Fatalf("after the master went away: Via = %q, %v; want %q", via, err, sshlink.ViaSSH)
	}
}

// No master: a socket nobody listens on (a master killed with -9), or one that is not ours to
// trust, or none at all: the connection is made directly, at once.
func TestControlMasterFallback(t *testing.T) {
	srv := sshd.Start(t)
	dir, err := os.MkdirTemp("", "mcp-master-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	stale := filepath.Join(dir, "stale.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: stale}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd) // bound, never listening: connect is refused
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(shared, "ssh.sock")) // answers, in a directory others may write
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for name, sock := range map[string]string{
		"stale":    stale,
		"writable": filepath.Join(shared, "ssh.sock"),
		"missing":  filepath.Join(dir, "missing.sock"),
		"none":     "",
	} {
		t.Run(name, func(t *testing.T) {
			c := guest.New(masterTarget(srv, sock), guest.Options{})
			defer c.Close()
			t0 := time.Now()
			via, err := c.Via(context.Background())
			if err != nil || via != sshlink.ViaSSH {
				t.Fatalf("Via = %q, %v; want %q", via, err, sshlink.ViaSSH)
			}
			if _, err := c.Exec(context.Background(), guest.ExecRequest{Argv: []string{"true"}, Dir: "/"}); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: connected directly in %s", name, time.Since(t0).Round(time.Millisecond))
		})
	}
}

// Handoff (serve): the first connection rides the master, then the connection moves to one of
// its own; calls work throughout.
func TestControlMasterHandoff(t *testing.T) {
	srv := sshd.Start(t)
	sock := startMaster(t, srv)
	ctx := context.Background()
	c := guest.New(masterTarget(srv, sock), guest.Options{Handoff: true})
	defer c.Close()
	if via, err := c.Via(ctx); err != nil || via != sshlink.ViaControlMaster {
		t.Fatalf("Via = %q, %v; want %q first", via, err, sshlink.ViaControlMaster)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.Exec(ctx, guest.ExecRequest{Argv: []string{"true"}, Dir: "/"}); err != nil {
			t.Fatal(err)
		}
		if via, _ := c.Via(ctx); via == sshlink.ViaSSH {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no handoff to a connection of its own")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, err := c.Stream(ctx, "echo ok", nil); err != nil || string(out) != "ok\n" {
		t.Fatalf("Stream after the handoff = %q, %v", out, err)
	}
}

// A master whose connection has no session left (sshd's MaxSessions: 10 in a Lima guest, and
// every process riding the master holds one or two): a stream, a terminal's command and its
// probe go on over a connection of their own, with their input whole (nothing was read by the
// refused attempt) and without the master's refusal on stderr; the command's own exit code
// stays its own.
func TestControlMasterFull(t *testing.T) {
	srv := sshd.StartWith(t, sshd.Config{MaxSessions: 5})
	sock := startMaster(t, srv)
	ctx := context.Background()
	c := guest.New(masterTarget(srv, sock), guest.Options{})
	defer c.Close()
	c2 := guest.New(masterTarget(srv, sock), guest.Options{NoLoginShell: true})
	defer c2.Close()
	for _, c := range []*guest.Conn{c, c2} {
		if via, err := c.Via(ctx); err != nil || via != sshlink.ViaControlMaster {
			t.Fatalf("Via = %q, %v; want %q first", via, err, sshlink.ViaControlMaster)
		}
	}
	// c and c2 hold two sessions each (SFTP, the runner); a third process takes the last one.
	hold := exec.Command("ssh", "-F", "/dev/null", "-o", "ControlPath="+sock, "-o", "ControlMaster=no", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-T", "-l", srv.User, "127.0.0.1", "echo holding; sleep 120")
	stdout, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Process.Kill(); _ = hold.Wait() })
	if _, err := stdout.Read(make([]byte, 8)); err != nil {
		t.Fatalf("the session that fills the master did not start: %v", err)
	}
	// The master is full now: plain OpenSSH says so.
	out, err := exec.Command("ssh", "-F", "/dev/null", "-o", "ControlPath="+sock, "-o", "ControlMaster=no", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-T", "-l", srv.User, "127.0.0.1", "true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "session request failed") {
		t.Fatalf("the master is not full: %v %s", err, out)
	}

	// The Lima user's one-shot commands (a session's network record, a live policy change,
	// a release) go on over a connection of their own too; c2 still rides the master.
	if o, err := c2.Output(ctx, "echo record"); err != nil || o != "record\n" {
		t.Fatalf("a one-shot command with a full master = %q, %v; want record", o, err)
	}
	if via, err := c2.Via(ctx); err != nil || via != sshlink.ViaSSH {
		t.Fatalf("after a one-shot command's refusal: Via = %q, %v; want %q", via, err, sshlink.ViaSSH)
	}

	input := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: more than a pipe holds
	got, err := c.Stream(ctx, "wc -c; echo done", strings.NewReader(input))
	if err != nil || strings.Fields(string(got))[0] != strconv.Itoa(len(input)) || !strings.HasSuffix(string(got), "done\n") {
		t.Fatalf("Stream with a full master = %q, %v; want all %d bytes read", got, err, len(input))
	}
	if via, err := c.Via(ctx); err != nil || via != sshlink.ViaSSH {
		t.Fatalf("after the refusal: Via = %q, %v; want %q", via, err, sshlink.ViaSSH)
	}
	if res, err := c.Exec(ctx, guest.ExecRequest{Argv: []string{"true"}, Dir: "/"}); err != nil || res.ExitCode != 0 {
		t.Fatalf("Exec after moving off the master = %+v, %v", res, err)
	}

	tm := terminal.Open(func() *sshlink.Target { tg := guesttest.Target(srv); tg.ControlPath = sock; return tg }(), nil)
	defer tm.Close()
	if tm.Via() != sshlink.ViaControlMaster {
		t.Fatalf("the terminal does not try the master first: %s", tm.Via())
	}
	var so, se strings.Builder
	st, err := tm.Run(ctx, terminal.Request{Script: "echo ran; echo err >&2; exit 3", Stdout: &so, Stderr: &se})
	if err != nil || st != 3 || so.String() != "ran\n" || se.String() != "err\n" {
		t.Fatalf("Run with a full master = %d, %v, stdout %q, stderr %q; want 3, ran, err", st, err, so.String(), se.String())
	}
	if tm.Via() != sshlink.ViaSSH {
		t.Errorf("the terminal stayed on the full master")
	}
	if o, err := tm.Output(ctx, "echo probe"); err != nil || o != "probe\n" {
		t.Fatalf("Output = %q, %v", o, err)
	}
}
