package servecmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// knownSecret is in serve's environment (under a name that says it is secret) and in the
// agent's arguments: the timeline never holds it.
const knownSecret = "lmcp-known-secret-4b1d7e9a02"

// A scripted agent session over a real MCP client and a real sshd: every call is in the
// timeline, in order, with its tool, summarised arguments, exit code or error, result size;
// a background process's start and end; the checkpoint taken and restored; the server's start
// and end. File contents and the secret are not in it.
func TestServeRecordsTimeline(t *testing.T) {
	t.Setenv("LMCP_TEST_API_TOKEN", knownSecret)
	f := newServeFixture(t)
	ctx := ctxFor(t, 3*time.Minute)
	r := startServe(t, &Options{Workdir: f.workdir, Open: f.open(t, false)})
	c, err := connectHTTP(ctx, r.url, r.token)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(f.workdir, "src", "a.go")
	content := "package a\n// a file's own words: lorem ipsum dolor\n// " + knownSecret + "\n"
	toolsuite.MustOK(t, c, "write_file", map[string]any{"path": file, "content": content})
	toolsuite.MustOK(t, c, "read_file", map[string]any{"path": file})
	toolsuite.MustOK(t, c, "run_shell_command", map[string]any{"command": []string{"sh", "-c", "echo " + knownSecret + " >/dev/null; echo made >src/b.txt"}, "directory": f.workdir})
	toolsuite.MustOK(t, c, "run_shell_command", map[string]any{"command": []string{"sh", "-c", "exit 3"}, "directory": f.workdir})
	toolsuite.MustError(t, c, "read_file", map[string]any{"path": filepath.Join(f.workdir, "missing.txt")})
	cp := toolsuite.MustOK(t, c, "checkpoint", map[string]any{"label": "before bg"})
	bg := toolsuite.MustOK(t, c, "run_shell_command", map[string]any{"command": []string{"sleep", "300"}, "directory": f.workdir, "background": true})
	bgID := int(bg.Structured["background_id"].(float64))
	toolsuite.MustOK(t, c, "kill_background_process", map[string]any{"id": bgID, "signal": "KILL"})
	toolsuite.MustOK(t, c, "restore_checkpoint", map[string]any{"id": cp.Structured["id"]})
	_ = c.Close()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	dir := staging.StoreFor(f.instDir).SessionDir(staging.SessionID(f.workdir))
	raw, err := os.ReadFile(filepath.Join(dir, timeline.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{knownSecret, "lorem ipsum"} {
		if strings.Contains(string(raw), bad) {
			t.Errorf("the timeline holds %q:\n%s", bad, raw)
		}
	}
	tl, err := timeline.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tl.Events {
		s := string(e.Kind)
		if e.Tool != "" {
			s += ":" + e.Tool
		}
		got = append(got, s)
	}
	want := []string{"serve_start", "call:write_file", "call:read_file", "call:run_shell_command", "call:run_shell_command", "call:read_file",
		"call:checkpoint", "call:run_shell_command", "background_start:run_shell_command", "call:kill_background_process", "background_exit",
		"call:restore_checkpoint", "serve_end"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events:\n got %v\nwant %v\n%s", got, want, raw)
	}
	ev := tl.Events
	if ev[1].Paths[0] != "src/a.go" || ev[1].Args["content"].(map[string]any)["bytes"] != float64(len(content)) || ev[1].DurationMS <= 0 {
		t.Errorf("write_file: %+v", ev[1])
	}
	if ev[2].ResultBytes < len("package a") {
		t.Errorf("read_file's result size: %d", ev[2].ResultBytes)
	}
	if ev[3].Exit == nil || *ev[3].Exit != 0 || !strings.Contains(ev[3].Command, "echo made >src/b.txt") || !strings.Contains(ev[3].Command, timeline.Redacted) || ev[3].Dir != f.workdir {
		t.Errorf("the first command: %+v", ev[3])
	}
	if ev[4].Exit == nil || *ev[4].Exit != 3 || !ev[4].Failed() {
		t.Errorf("the failing command: %+v", ev[4])
	}
	if ev[5].Error == "" {
		t.Errorf("the failed read: %+v", ev[5])
	}
	if ev[6].Checkpoint == "" || ev[11].Checkpoint != ev[6].Checkpoint {
		t.Errorf("checkpoint %q restored %q", ev[6].Checkpoint, ev[11].Checkpoint)
	}
	if ev[8].Background != bgID || ev[10].Background != bgID || ev[8].Command != "sleep 300" {
		t.Errorf("background: %+v / %+v", ev[8], ev[10])
	}
	if tl.Counts.Calls != 9 || tl.Counts.Commands != 3 || tl.Counts.Failures != 2 {
		t.Errorf("counts: %+v", tl.Counts)
	}
}

// The environment a helper serve (TestServeKilledHelper) is started with.
const helperEnv = "LMCP_TIMELINE_KILL_HELPER"

// A server killed with SIGKILL keeps its timeline up to its last completed call: every line
// whole, the call under way when it died absent, no end.
func TestServeKilledKeepsTimeline(t *testing.T) {
	f := newServeFixture(t)
	ctx := ctxFor(t, 3*time.Minute)
	hostKey := string(ssh.MarshalAuthorizedKey(f.srv.HostKey))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1",
		"LMCP_H_ADDR="+f.srv.Addr, "LMCP_H_USER="+f.srv.User, "LMCP_H_KEY="+f.srv.ClientKeyPath,
		"LMCP_H_HOSTKEY="+hostKey, "LMCP_H_WORKDIR="+f.workdir, "LMCP_H_INSTDIR="+f.instDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var url, token string
	var seen []string
	for url == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the helper serve ended before its endpoint:\n%s", strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if m := endpointLine.FindStringSubmatch(l); m != nil {
				url, token = m[1], m[2]
			}
		case <-ctx.Done():
			t.Fatalf("no endpoint from the helper serve:\n%s", strings.Join(seen, "\n"))
		}
	}
	go func() {
		for range lines { // keep the pipe drained
		}
	}()
	c, err := connectHTTP(ctx, url, token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const done = 5
	for i := range done {
		toolsuite.MustOK(t, c, "run_shell_command", map[string]any{"command": []string{"echo", fmt.Sprint(i)}, "directory": f.workdir})
	}
	// A call under way when the server dies: it started (its marker file is there) and never
	// completed.
	marker := filepath.Join(f.srv.Home, fmt.Sprintf("lmcp-killed-%d", time.Now().UnixNano()))
	t.Cleanup(func() { f.srv.Run(t, "rm", "-f", marker) })
	go func() {
		_, _ = c.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_shell_command", Arguments: map[string]any{"command": []string{"sh", "-c", "touch " + marker + "; sleep 120"}, "directory": f.workdir}})
	}()
	for deadline := time.Now().Add(60 * time.Second); ; {
		if out := f.srv.Run(t, "sh", "-c", "test -e "+marker+" && echo yes || true"); strings.TrimSpace(out) == "yes" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the last call did not start within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	_ = cmd.Wait()

	dir := staging.StoreFor(f.instDir).SessionDir(staging.SessionID(f.workdir))
	tl, err := timeline.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, e := range tl.Events {
		if e.Kind == timeline.ServeEnd {
			t.Errorf("a killed server recorded its end: %+v", e)
		}
		if e.IsCommand() {
			cmds = append(cmds, e.Command)
		}
	}
	if tl.Bad != 0 || len(cmds) != done || cmds[done-1] != fmt.Sprintf("echo %d", done-1) {
		t.Errorf("after kill -9: %d bad lines, commands %q (want echo 0 … echo %d)", tl.Bad, cmds, done-1)
	}
}

// TestMain runs, in the process TestServeKilledKeepsTimeline starts, the serve it kills.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		killedHelper()
		os.Exit(2) // serve returned: the test that waits for the kill says so
	}
	os.Exit(m.Run())
}

// killedHelper serves the sshd the environment names, over HTTP, until killed.
func killedHelper() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	key, err := os.ReadFile(os.Getenv("LMCP_H_KEY"))
	if err != nil {
		fail(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		fail(err)
	}
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(os.Getenv("LMCP_H_HOSTKEY")))
	if err != nil {
		fail(err)
	}
	target := &sshlink.Target{Name: "sshd-test", Addr: os.Getenv("LMCP_H_ADDR"), User: os.Getenv("LMCP_H_USER"),
		Signers: []ssh.Signer{signer}, HostKeyCallback: ssh.FixedHostKey(hostKey), Arch: runtime.GOARCH}
	opts := &Options{
		IO:       &iostreams.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: os.Stderr},
		Instance: "sshd-test", Workdir: os.Getenv("LMCP_H_WORKDIR"), HTTP: HTTPOptions{Addr: "127.0.0.1:0"},
		Open: func(_ context.Context, opts *Options, log *slog.Logger) (*sessionopen.Target, error) {
			inst := &instance.Instance{Name: opts.Instance, Status: "Running", Dir: os.Getenv("LMCP_H_INSTDIR")}
			conn := guest.New(func(context.Context) (*sshlink.Target, error) { return target, nil }, guest.Options{Logger: log})
			return &sessionopen.Target{Instance: inst, Store: staging.StoreFor(inst.Dir), Conn: conn}, nil
		},
	}
	fail(fmt.Errorf("serve returned: %v", Run(context.Background(), opts)))
}
