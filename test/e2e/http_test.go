//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// httpBearer adds "Authorization: Bearer token" to every request.
type httpBearer struct{ token string }

func (b httpBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectStreamable connects a go-sdk client to url over Streamable HTTP with token.
func connectStreamable(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	return connectStreamableAt(ctx, url, token, "")
}

// connectStreamableAt is connectStreamable with the client pinned to protocol revision pv
// ("": the client's default, the newest).
func connectStreamableAt(ctx context.Context, url, token, pv string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "limactl-mcp-e2e-http", Version: "v0.0.1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: httpBearer{token: token}},
		MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: pv})
}

var httpEndpointLine = regexp.MustCompile(`(?m)^MCP endpoint: (http://\S+/mcp)  bearer token: (.*)$`)

// TestServeHTTP runs `limactl-mcp serve mcp-e2e --http 127.0.0.1:0 --http-token-file FILE`
// (FILE missing: the server creates it), connects the go-sdk's Streamable HTTP client with the
// token from FILE, uses the tools (the same staged session as over stdio) and checks that
// requests without the token are refused and that the server stops cleanly on SIGTERM.
func TestServeHTTP(t *testing.T) {
	dir := project(t, map[string]string{"hello.txt": "hello over HTTP\n"})
	discardOnCleanup(t, dir)
	tokenDir, err := os.MkdirTemp("", "mcp-e2e-http-token-")
	mustT(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tokenDir) })
	chownToUser(t, tokenDir) // the server runs as the user and creates the file there
	tokenFile := filepath.Join(tokenDir, "token")

	procCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := vm.Command(procCtx, ourBin, "serve", instanceName, "--http", "127.0.0.1:0", "--http-token-file", tokenFile)
	cmd.Dir = dir
	stderr, stdout := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	mustT(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			<-exited
		}
		if t.Failed() {
			t.Logf("stderr of serve --http:\n%s", stderr.String())
		}
	})

	// The endpoint line, with the port the kernel picked.
	var url, tokenNote string
	deadline := time.Now().Add(2 * time.Minute)
	for url == "" {
		if m := httpEndpointLine.FindStringSubmatch(stderr.String()); m != nil {
			url, tokenNote = m[1], m[2]
			break
		}
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("serve --http exited (%v) before printing its endpoint", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("serve --http printed no endpoint line in 2 minutes")
		}
	}
	t.Logf("endpoint %s, token: %s", url, tokenNote)
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[1-9][0-9]*/mcp$`).MatchString(url) {
		t.Errorf("endpoint %q: want http://127.0.0.1:PORT/mcp with the bound port", url)
	}

	// The token file: created by the server, 0600, owned by the user; the token not printed.
	st, err := os.Stat(tokenFile)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", st.Mode().Perm())
	}
	data, err := os.ReadFile(tokenFile)
	mustT(t, err)
	token := strings.TrimSpace(string(data))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Fatalf("token file holds %q, want 64 hex digits", data)
	}
	if strings.Contains(stderr.String(), token) {
		t.Errorf("the token was printed although it went to %s", tokenFile)
	}
	if !strings.Contains(tokenNote, tokenFile) {
		t.Errorf("the endpoint line says %q about the token, want the file name", tokenNote)
	}

	t.Run("Unauthorized", func(t *testing.T) {
		ctx := ctxT(t, time.Minute)
		for _, auth := range []string{"", "Bearer not-the-token", "Bearer " + token[:32]} {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url,
				strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			mustT(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			mustT(t, err)
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("Authorization %q: status %d, WWW-Authenticate %q, body %q; want 401 and Bearer",
					auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
			}
		}
		if s, err := connectStreamable(ctx, url, "0123456789abcdef"); err == nil {
			_ = s.Close()
			t.Errorf("the go-sdk client connected with a wrong token")
		}
	})

	ctx := ctxT(t, 5*time.Minute)
	session, err := connectStreamable(ctx, url, token)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	defer session.Close()
	checkOurs(t, session)
	// The client's default, 2026-07-28, served statelessly (it used to fall back to 2025-11-25).
	if pv := session.InitializeResult().ProtocolVersion; pv != "2026-07-28" {
		t.Errorf("HTTP: negotiated protocol %q, want 2026-07-28", pv)
	}

	// Clients pinned to the older revisions (sessions, initialize) use the same server.
	for _, pv := range []string{"2025-11-25", "2025-06-18"} {
		t.Run("protocol "+pv, func(t *testing.T) {
			ps, err := connectStreamableAt(ctx, url, token, pv)
			if err != nil {
				t.Fatalf("connecting at %s: %v", pv, err)
			}
			defer ps.Close()
			if got := ps.InitializeResult().ProtocolVersion; got != pv {
				t.Errorf("negotiated %q, want %q", got, pv)
			}
			if got := shellOK(t, ps, dir, "cat hello.txt"); got != "hello over HTTP\n" {
				t.Errorf("cat hello.txt at %s: %q", pv, got)
			}
		})
	}

	t.Run("run_shell_command", func(t *testing.T) {
		r := toolsuite.MustOK(t, session, "run_shell_command", map[string]any{"command": []string{"uname", "-s"}, "directory": "/"})
		if r.Structured["stdout"] != "Linux\n" || r.Structured["exit_code"] != 0.0 {
			t.Errorf("uname -s: %v", r.Structured)
		}
	})
	t.Run("read_file", func(t *testing.T) {
		r := toolsuite.MustOK(t, session, "read_file", map[string]any{"path": "/etc/os-release"})
		if want := guestShell(t, "cat /etc/os-release"); r.Structured["content"] != want {
			t.Errorf("read_file(/etc/os-release) = %q, want %q", r.Structured["content"], want)
		}
	})
	t.Run("staged session", func(t *testing.T) {
		// The working directory is staged as over stdio: the tools see the copy in the guest.
		r := toolsuite.MustOK(t, session, "read_file", map[string]any{"path": dir + "/hello.txt"})
		if r.Structured["content"] != "hello over HTTP\n" {
			t.Errorf("read_file of the staged copy: %v", r.Structured)
		}
		toolsuite.MustOK(t, session, "write_file", map[string]any{"path": dir + "/new.txt", "content": "new\n"})
		if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
			t.Errorf("write_file reached the host")
		}
		r = toolsuite.MustOK(t, session, "pending_changes", map[string]any{})
		if b, _ := json.Marshal(r.Structured); !strings.Contains(string(b), `"path":"`+dir+`/new.txt"`) || !strings.Contains(string(b), `"kind":"added"`) {
			t.Errorf("pending_changes: %s", b)
		}
	})
	if out := stdout.String(); out != "" {
		t.Errorf("serve --http wrote to stdout: %q", out)
	}

	// SIGTERM with the session open: a clean, prompt exit (status 0). Signal our process itself:
	// runuser, when signalled, kills its child and dies of the signal, hiding the exit status.
	pid := cmd.Process.Pid
	if vm.User != "" {
		pid = childPID(t, pid)
	}
	t0 := time.Now()
	mustT(t, syscall.Kill(pid, syscall.SIGTERM))
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("serve --http exited with %v after SIGTERM, want status 0", err)
		}
		d := time.Since(t0)
		t.Logf("serve --http exited %s after SIGTERM (%v)", d.Round(time.Millisecond), cmd.ProcessState)
		if d > 8*time.Second {
			t.Errorf("serve --http took %s to exit after SIGTERM", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve --http still running 30 s after SIGTERM")
	}
}

// discardOnCleanup discards the staged session of dir when the test ends (after the servers
// started later stopped), so that a kept VM (LIMACTL_MCP_E2E_KEEP=1) does not collect them.
func discardOnCleanup(t *testing.T, dir string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := vm.Command(ctx, ourBin, "discard", instanceName, "--yes")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("discarding the staged session of %s: %v\n%s", dir, err, out)
		}
	})
}

// childPID returns the pid of the only child process of pid (our binary under runuser).
func childPID(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err == nil {
		if f := strings.Fields(string(data)); len(f) == 1 {
			if child, err := strconv.Atoi(f[0]); err == nil {
				return child
			}
		}
	}
	// Without /proc/PID/task/PID/children: the process whose parent is pid.
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var children []int
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			children = append(children, child)
		}
	}
	if len(children) != 1 {
		t.Fatalf("process %d has children %v, want exactly one", pid, children)
	}
	return children[0]
}
