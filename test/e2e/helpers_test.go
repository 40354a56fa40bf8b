//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/limavm"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/lockedbuf"
)

// ctxT returns a context that ends after d or when the test ends.
func ctxT(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// guestShell runs a bash script in the guest as the guest user and returns its stdout; an error
// fails the test.
func guestShell(t testing.TB, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdout, stderr, err := vm.Shell(ctx, script)
	if err != nil {
		t.Fatalf("guest script failed: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout, stderr)
	}
	return stdout
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// sharedDir creates a directory with the same absolute path on the host and in the guest, for
// the server's working directory: serve takes the host's working directory as the default
// directory of glob and search, and (without staging) the same path names the guest's directory.
// The guest copy is writable by the guest user; both are removed when the test ends.
func sharedDir(t testing.TB) string {
	t.Helper()
	name := strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "-"), "-")
	if len(name) > 60 {
		name = name[:60]
	}
	dir := fmt.Sprintf("/tmp/mcp-e2e-%s-%d", name, time.Now().UnixNano()%1e9)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// The VM may be stopped at this point (the restart test); that is not a failure.
		_, _, _ = vm.Shell(ctx, fmt.Sprintf("rm -rf %s", shq(dir)))
	})
	guestShell(t, fmt.Sprintf("mkdir -p %s", shq(dir)))
	return dir
}

var (
	guestHomeOnce sync.Once
	guestHomeDir  string
)

// guestHome is the guest user's home directory (such as /home/limatest.guest).
func guestHome(t testing.TB) string {
	t.Helper()
	guestHomeOnce.Do(func() {
		guestHomeDir = strings.TrimSpace(guestShell(t, `printf '%s\n' "$HOME"`))
	})
	if !strings.HasPrefix(guestHomeDir, "/") {
		t.Fatalf("guest $HOME = %q", guestHomeDir)
	}
	return guestHomeDir
}

// shq quotes s for bash.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'" }

// lockedBuffer collects a server's stderr (written by exec's copier, read by the test).
type lockedBuffer = lockedbuf.Buffer

// server is one MCP server process under test and the client session connected to it.
type server struct {
	Session *mcp.ClientSession
	Stderr  *lockedBuffer
	Dir     string // its working directory (host and guest)
	Connect time.Duration
	PID     int // the server process's, on the host
}

// startServer runs name+args (as vm.User, with vm.Env, in a directory that exists on the host
// and in the guest) and connects a go-sdk client to it over stdio. The session is closed, and
// the server's stderr logged if the test failed, when the test ends.
func startServer(t testing.TB, opts *mcp.ClientSessionOptions, name string, args ...string) *server {
	t.Helper()
	return startServerIn(t, sharedDir(t), opts, name, args...)
}

// startServerIn is startServer with the working directory dir (which must exist on the host).
func startServerIn(t testing.TB, dir string, opts *mcp.ClientSessionOptions, name string, args ...string) *server {
	t.Helper()
	return startServerClient(t, dir, nil, opts, name, args...)
}

// startServerClient is startServerIn with a client of copts (its notification handlers).
func startServerClient(t testing.TB, dir string, copts *mcp.ClientOptions, opts *mcp.ClientSessionOptions, name string, args ...string) *server {
	t.Helper()
	// Not ctxT: the process must outlive the Connect call, until Close in Cleanup.
	procCtx, cancel := context.WithCancel(context.Background())
	cmd := vm.Command(procCtx, name, args...)
	cmd.Dir = dir
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "limactl-mcp-e2e", Version: "v0.0.1"}, copts)
	cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer ccancel()
	t0 := time.Now()
	session, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, opts)
	elapsed := time.Since(t0)
	if err != nil {
		cancel()
		t.Fatalf("connecting to `%s %s`: %v\nstderr:\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	t.Cleanup(func() {
		if err := session.Close(); err != nil {
			t.Logf("closing the session of `%s %s`: %v", name, strings.Join(args, " "), err)
		}
		cancel()
		if t.Failed() {
			t.Logf("stderr of `%s %s`:\n%s", name, strings.Join(args, " "), stderr.String())
		}
	})
	return &server{Session: session, Stderr: stderr, Dir: dir, Connect: elapsed, PID: cmd.Process.Pid}
}

// suiteEnv is the toolsuite environment for a server started by startServer.
func suiteEnv(t *testing.T, s *server) toolsuite.Env {
	t.Helper()
	scratch := fmt.Sprintf("%s/mcp-e2e-scratch-%d", guestHome(t), time.Now().UnixNano()%1e9)
	guestShell(t, fmt.Sprintf("rm -rf %[1]s && mkdir -p %[1]s", shq(scratch)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _, _ = vm.Shell(ctx, fmt.Sprintf("rm -rf %s", shq(scratch)))
	})
	return toolsuite.Env{
		Session:  s.Session,
		Scratch:  scratch,
		Shell:    guestShell,
		ToolRoot: s.Dir,
	}
}

// callTool calls a tool and returns its result and first text content; a protocol error fails
// the test.
func callTool(t testing.TB, s *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error: %v", name, args, err)
	}
	return res, firstText(res)
}

// callChecked calls a tool and returns its structured result, or a problem that starts with
// "unanswered" (no answer), "error result" or "not JSON"; for tests that count problems
// instead of failing at the first.
func callChecked(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any) (map[string]any, string) {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, "unanswered: " + err.Error()
	}
	text := firstText(res)
	if res.IsError {
		return nil, "error result: " + text
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, "not JSON: " + text
	}
	return m, ""
}

func firstText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// shellOK runs ["bash","-c",script] in dir through run_shell_command, fails the test unless it
// succeeded with exit code 0, and returns its stdout.
func shellOK(t testing.TB, s *mcp.ClientSession, dir, script string) string {
	t.Helper()
	res, text := callTool(t, s, "run_shell_command", map[string]any{"command": []string{"bash", "-c", script}, "directory": dir})
	if res.IsError {
		t.Fatalf("run_shell_command(%q): error result: %s", script, text)
	}
	var out struct {
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
		ExitCode *int   `json:"exit_code"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("run_shell_command(%q): result is not JSON: %q", script, text)
	}
	if out.ExitCode == nil || *out.ExitCode != 0 {
		t.Fatalf("run_shell_command(%q): %s", script, text)
	}
	return out.Stdout
}

// toolNames lists the session's tools.
func toolNames(t testing.TB, s *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// runCmd runs a command to completion with stdin from /dev/null.
func runCmd(cmd *exec.Cmd) (stdout, stderr string, err error) {
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	return so.String(), se.String(), err
}

// copyToGuest puts what `tar -c -f - TARARGS` makes on the host into dest in the guest (as
// root, through limactl shell), unless dest's stamp says it holds stamp already: extracted
// into $new (dest.new), fix run on it (a shell snippet, as the Lima user with sudo), then moved
// over dest and stamped; check runs last, and its output is logged. dest is removed when the
// test ends (the test VM's disk is 4 GiB), but from a kept VM.
func copyToGuest(t *testing.T, what, dest, stamp string, tarArgs []string, fix, check string) {
	t.Helper()
	if !limavm.Keep() {
		t.Cleanup(func() { guestShell(t, "sudo rm -rf "+dest) })
	}
	if strings.TrimSpace(guestShell(t, "cat "+dest+"/.stamp 2>/dev/null || true")) == stamp {
		return
	}
	t0 := time.Now()
	tarCmd := exec.Command("tar", append([]string{"-c", "-f", "-"}, tarArgs...)...)
	pipe, err := tarCmd.StdoutPipe()
	mustT(t, err)
	var tarErr strings.Builder
	tarCmd.Stderr = &tarErr
	put := vm.Command(ctxT(t, 10*time.Minute), "limactl", "shell", "--workdir", "/", instanceName, "bash", "-c",
		"set -e; new="+dest+".new; sudo rm -rf \"$new\"; sudo mkdir -p \"$new\"; sudo tar -x --no-same-owner -C \"$new\"; "+fix+"; "+
			"sudo rm -rf "+dest+"; sudo mv \"$new\" "+dest+"; printf '%s\\n' "+shq(stamp)+" | sudo tee "+dest+"/.stamp >/dev/null; "+check)
	put.Stdin = pipe
	var out strings.Builder
	put.Stdout, put.Stderr = &out, &out
	mustT(t, tarCmd.Start())
	err = put.Run()
	tarCmd.Wait()
	if err != nil {
		t.Fatalf("copying %s into the guest: %v\n%s\n%s", what, err, out.String(), tarErr.String())
	}
	t.Logf("copied %s into the guest in %s: %s", what, time.Since(t0).Round(time.Second), strings.TrimSpace(out.String()))
}

// tmuxCommand runs cmd (made by vm.Command: its path, arguments and environment, plus env
// and TERM) in a width×height terminal, as the user, in dir, then the shell line tail (say,
// "; echo EXIT=$?; sleep 60" to keep the last screen and the exit status).
func tmuxCommand(t *testing.T, dir string, width, height int, cmd *exec.Cmd, env []string, tail string) *tmuxtest.Session {
	t.Helper()
	line := "cd " + shq(dir) + " && env -i"
	for _, kv := range append(append(cmd.Env, "TERM=xterm-256color"), env...) {
		line += " " + shq(kv)
	}
	line += " " + shq(cmd.Path)
	for _, a := range cmd.Args[1:] {
		line += " " + shq(a)
	}
	return tmuxtest.Start(t, width, height, line+tail)
}
