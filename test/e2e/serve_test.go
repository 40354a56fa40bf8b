//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// TestServeRestart, which stops and restarts the VM, is in zz_restart_test.go: Go runs the
// tests of a package file by file in name order, so that file keeps it last.

// limaServerTitle is the serverInfo.title of Lima's bundled server, to tell it apart from ours
// (both are named "lima").
const limaServerTitle = "Lima VM, for sandboxing local command executions and file I/O operations"

// checkOurs fails the test unless the session is served by our limactl-mcp, not Lima's
// bundled plugin: ours has a `replace` tool (Lima v2.2.0's has none) and its own title and
// version.
func checkOurs(t *testing.T, s *mcp.ClientSession) {
	t.Helper()
	init := s.InitializeResult()
	if init == nil || init.ServerInfo == nil {
		t.Fatal("no initialize result")
	}
	info := init.ServerInfo
	t.Logf("serverInfo: name=%q title=%q version=%q; protocol %s", info.Name, info.Title, info.Version, init.ProtocolVersion)
	if info.Name != "lima" {
		t.Errorf("serverInfo.name = %q, want %q (the name of Lima's server, kept for compatibility)", info.Name, "lima")
	}
	if !strings.Contains(info.Title, "limactl-mcp") || info.Title == limaServerTitle {
		t.Errorf("serverInfo.title = %q: not ours", info.Title)
	}
	if strings.TrimPrefix(info.Version, "v") == "2.2.0" {
		t.Errorf("serverInfo.version = %q: that is Lima's bundled server", info.Version)
	}
	if names := toolNames(t, s); !slices.Contains(names, "replace") {
		t.Errorf("tools/list = %v: no `replace`, so this is not our server", names)
	}
}

// TestServeDirect runs the shared tool suite against `limactl-mcp serve mcp-e2e`.
func TestServeDirect(t *testing.T) {
	s := startServer(t, nil, "limactl-mcp", "serve", instanceName)
	t.Logf("connected in %s (working directory %s)", s.Connect.Round(time.Millisecond), s.Dir)
	checkOurs(t, s.Session)
	toolsuite.Run(t, suiteEnv(t, s))
}

// TestServeViaLimactl runs the suite against `limactl mcp serve mcp-e2e`: Lima's plugin
// discovery must pick our binary (first on PATH) over Lima's bundled one (prefix/libexec/lima).
func TestServeViaLimactl(t *testing.T) {
	t.Run("Version", func(t *testing.T) {
		ctx := ctxT(t, time.Minute)
		viaLimactl, stderr, err := runCmd(vm.Command(ctx, "limactl", "mcp", "--version"))
		if err != nil {
			t.Fatalf("limactl mcp --version: %v\nstderr: %s", err, stderr)
		}
		direct, _, err := runCmd(vm.Command(ctx, ourBin, "--version"))
		if err != nil {
			t.Fatalf("%s --version: %v", ourBin, err)
		}
		lima, _, err := runCmd(vm.Command(ctx, limaBin, "--version"))
		if err != nil {
			t.Fatalf("%s --version: %v", limaBin, err)
		}
		t.Logf("limactl mcp --version: %q; ours: %q; Lima's bundled: %q", viaLimactl, direct, lima)
		if !strings.HasPrefix(viaLimactl, "limactl-mcp version ") {
			t.Errorf("limactl mcp --version = %q, want limactl-mcp version ...", viaLimactl)
		}
		if viaLimactl != direct {
			t.Errorf("limactl mcp --version = %q, want ours (%q)", viaLimactl, direct)
		}
		if viaLimactl == lima {
			t.Errorf("limactl mcp --version = %q, the same as Lima's bundled plugin: cannot tell which answered", viaLimactl)
		}
	})

	s := startServer(t, nil, "limactl", "mcp", "serve", instanceName)
	t.Logf("connected in %s (working directory %s)", s.Connect.Round(time.Millisecond), s.Dir)
	checkOurs(t, s.Session)
	// The client's default is the newest revision: no initialize, no session.
	if pv := s.Session.InitializeResult().ProtocolVersion; pv != "2026-07-28" {
		t.Errorf("stdio: negotiated protocol %q, want 2026-07-28", pv)
	}
	if t.Failed() {
		t.FailNow() // running the suite against the wrong server proves nothing
	}
	toolsuite.Run(t, suiteEnv(t, s))
}

// TestServeProtocolRevisions pins the client's protocol version to each revision with
// sessions that MCP clients in use today send (2025-06-18, 2025-11-25), through `limactl mcp
// serve` over stdio (the default, 2026-07-28, is TestServeViaLimactl's).
func TestServeProtocolRevisions(t *testing.T) {
	for _, pv := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(pv, func(t *testing.T) {
			s := startServer(t, &mcp.ClientSessionOptions{ProtocolVersion: pv}, "limactl", "mcp", "serve", instanceName)
			if got := s.Session.InitializeResult().ProtocolVersion; got != pv {
				t.Fatalf("negotiated protocol version %q, want %q", got, pv)
			}
			checkOurs(t, s.Session)
			if got := shellOK(t, s.Session, "/", "echo hello-$((6*7))"); got != "hello-42\n" {
				t.Errorf("run_shell_command stdout = %q, want %q", got, "hello-42\n")
			}
			res, text := callTool(t, s.Session, "read_file", map[string]any{"path": "/etc/hostname"})
			if res.IsError || !strings.Contains(text, "content") {
				t.Errorf("read_file(/etc/hostname) = %v %q", res.IsError, text)
			}
			if res.StructuredContent == nil {
				t.Errorf("read_file: no structuredContent at protocol %s", pv)
			}
		})
	}
}

// rawClient speaks JSON-RPC over a server's stdio by hand, keeping every line of its stdout.
type rawClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	msgs   chan json.RawMessage // every stdout line, in order
	eof    chan struct{}        // closed when stdout ends

	mu    sync.Mutex
	lines []string // every stdout line, raw
}

func startRaw(t *testing.T, name string, args ...string) *rawClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cmd := vm.Command(ctx, name, args...)
	cmd.Dir = sharedDir(t)
	c := &rawClient{t: t, cmd: cmd, stderr: &lockedBuffer{}, msgs: make(chan json.RawMessage, 100), eof: make(chan struct{})}
	cmd.Stderr = c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.eof)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.lines = append(c.lines, line)
			c.mu.Unlock()
			if json.Valid([]byte(line)) {
				c.msgs <- json.RawMessage(line)
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr of `%s %s`:\n%s", name, strings.Join(args, " "), c.stderr.String())
		}
	})
	return c
}

func (c *rawClient) send(msg map[string]any) {
	c.t.Helper()
	msg["jsonrpc"] = "2.0"
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to the server: %v", err)
	}
}

type rawResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call sends a request and waits for its response (skipping notifications the server sends).
func (c *rawClient) call(id int, method string, params any) rawResponse {
	c.t.Helper()
	c.send(map[string]any{"id": id, "method": method, "params": params})
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case m := <-c.msgs:
			var r rawResponse
			if err := json.Unmarshal(m, &r); err != nil {
				c.t.Fatalf("%s: %v: %s", method, err, m)
			}
			if r.Method != "" && len(r.ID) == 0 {
				continue // a notification
			}
			if string(r.ID) != fmt.Sprint(id) {
				c.t.Fatalf("%s: got a message with id %s, want the response to %d: %s", method, r.ID, id, m)
			}
			if r.Error != nil {
				c.t.Fatalf("%s: JSON-RPC error %d: %s", method, r.Error.Code, r.Error.Message)
			}
			return r
		case <-c.eof:
			c.t.Fatalf("%s: the server closed its stdout\nstderr:\n%s", method, c.stderr.String())
		case <-timeout:
			c.t.Fatalf("%s: no response in 3 minutes", method)
		}
	}
}

// closeAndWait closes the server's stdin (how a stdio client ends a session), waits for it to
// exit and returns every line it wrote to stdout.
func (c *rawClient) closeAndWait() []string {
	c.t.Helper()
	_ = c.stdin.Close()
	select {
	case <-c.eof:
	case <-time.After(time.Minute):
		c.t.Errorf("the server did not close stdout within a minute of stdin closing")
		_ = c.cmd.Process.Kill()
		<-c.eof
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
			c.t.Errorf("the server exited with %v after stdin closed, want exit status 0\nstderr:\n%s", err, c.stderr.String())
		}
	case <-time.After(time.Minute):
		c.t.Errorf("the server did not exit within a minute of stdin closing")
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lines)
}

// TestServeRawStdio drives a session by hand, as a client pinned to protocol 2025-06-18 would,
// and checks that the server's stdout carries nothing but JSON-RPC messages, one a line, even
// when the guest command writes to its stdout and stderr and a tool fails.
func TestServeRawStdio(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"Direct", []string{"limactl-mcp", "serve", instanceName}},
		{"ViaLimactl", []string{"limactl", "mcp", "serve", instanceName}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startRaw(t, tc.argv[0], tc.argv[1:]...)
			init := c.call(1, "initialize", map[string]any{
				"protocolVersion": "2025-06-18",
				"capabilities":    map[string]any{},
				"clientInfo":      map[string]any{"name": "raw-e2e", "version": "1"},
			})
			var ir struct {
				ProtocolVersion string `json:"protocolVersion"`
				ServerInfo      struct {
					Name  string `json:"name"`
					Title string `json:"title"`
				} `json:"serverInfo"`
				Capabilities struct {
					Tools *struct{} `json:"tools"`
				} `json:"capabilities"`
			}
			if err := json.Unmarshal(init.Result, &ir); err != nil {
				t.Fatalf("initialize result: %v: %s", err, init.Result)
			}
			if ir.ProtocolVersion != "2025-06-18" {
				t.Errorf("initialize: protocolVersion %q, want 2025-06-18", ir.ProtocolVersion)
			}
			if ir.ServerInfo.Name != "lima" || !strings.Contains(ir.ServerInfo.Title, "limactl-mcp") {
				t.Errorf("initialize: serverInfo %+v is not ours", ir.ServerInfo)
			}
			if ir.Capabilities.Tools == nil {
				t.Errorf("initialize: no tools capability: %s", init.Result)
			}
			c.send(map[string]any{"method": "notifications/initialized"})

			list := c.call(2, "tools/list", map[string]any{})
			var lr struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(list.Result, &lr); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range lr.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{"list_directory", "read_file", "write_file", "replace", "glob", "search_file_content", "run_shell_command"} {
				if !slices.Contains(names, want) {
					t.Errorf("tools/list lacks %s: %v", want, names)
				}
			}

			// A command that writes to both of its streams, including lines that are not JSON.
			call := c.call(3, "tools/call", map[string]any{
				"name": "run_shell_command",
				"arguments": map[string]any{
					"command":   []string{"bash", "-c", `echo 'not json {'; echo "to stderr" >&2; printf '\x1b[31mred\x1b[0m\n'; exit 3`},
					"directory": "/",
				},
			})
			var cr struct {
				IsError           bool `json:"isError"`
				StructuredContent struct {
					Stdout   string `json:"stdout"`
					Stderr   string `json:"stderr"`
					ExitCode *int   `json:"exit_code"`
				} `json:"structuredContent"`
			}
			if err := json.Unmarshal(call.Result, &cr); err != nil {
				t.Fatal(err)
			}
			sc := cr.StructuredContent
			if !strings.Contains(sc.Stdout, "not json {") || !strings.Contains(sc.Stderr, "to stderr") || sc.ExitCode == nil || *sc.ExitCode != 3 {
				t.Errorf("run_shell_command: %s", call.Result)
			}

			// A failing tool.
			fail := c.call(4, "tools/call", map[string]any{
				"name":      "read_file",
				"arguments": map[string]any{"path": "/nonexistent/e2e-file"},
			})
			if err := json.Unmarshal(fail.Result, &cr); err != nil {
				t.Fatal(err)
			}
			if !cr.IsError {
				t.Errorf("read_file(/nonexistent/e2e-file): want isError: %s", fail.Result)
			}
			// An unknown tool: a JSON-RPC error or an isError result, but on one line.
			c.send(map[string]any{"id": 5, "method": "tools/call", "params": map[string]any{"name": "no_such_tool", "arguments": map[string]any{}}})
			select {
			case <-c.msgs:
			case <-time.After(time.Minute):
				t.Errorf("no answer to tools/call of an unknown tool")
			}

			lines := c.closeAndWait()
			if len(lines) < 5 {
				t.Errorf("stdout had %d lines, want at least 5 (one per response)", len(lines))
			}
			for i, line := range lines {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Errorf("stdout line %d is not JSON: %q", i+1, line)
					continue
				}
				if string(m["jsonrpc"]) != `"2.0"` {
					t.Errorf("stdout line %d is not JSON-RPC 2.0: %q", i+1, line)
				}
				_, hasID := m["id"]
				_, hasMethod := m["method"]
				_, hasResult := m["result"]
				_, hasError := m["error"]
				if !hasMethod && !(hasID && (hasResult || hasError)) {
					t.Errorf("stdout line %d is neither a response nor a request/notification: %q", i+1, line)
				}
			}
		})
	}
}

// TestServeNoSuchInstance: a server for an instance that does not exist stays up (an agent's
// client would show only "connection closed"), and every call says what is wrong: the
// instances there are, a close name if one is, and how to create it.
func TestServeNoSuchInstance(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
		want []string
	}{
		{"Direct", []string{"limactl-mcp", "serve", "no-such-instance"},
			[]string{`no such Lima instance "no-such-instance"`, "(instances: ", instanceName, "limactl start --mount-none --name=no-such-instance", "restart this MCP server"}},
		{"ViaLimactl", []string{"limactl", "mcp", "serve", "mcp-e2f"},
			[]string{`no such Lima instance "mcp-e2f": did you mean "` + instanceName + `"?`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, nil, tc.argv[0], tc.argv[1:]...)
			res, text := callTool(t, s.Session, "run_shell_command", map[string]any{"directory": "/", "command": []string{"true"}})
			if !res.IsError {
				t.Fatalf("want an error result, got %s", text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%v: the error does not say %q:\n%s", tc.argv, w, text)
				}
			}
			if !strings.Contains(s.Stderr.String(), "no such Lima instance") {
				t.Errorf("stderr does not say it:\n%s", s.Stderr.String())
			}
		})
	}
}

// TestCommandsSuggestInstance: a misspelled instance gets "did you mean" from every command that
// names one, with the instances there are.
// A plain review, sync or discard (instance "default", which does not exist here) run in a
// project, or in a subdirectory of it, staged in the e2e instance names that instance and the
// exact command (issue 12: it said to create "default").
func TestCommandsFindTheInstanceThatStagedIt(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	chownToUser(t, dir)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	toolsuite.MustOK(t, s.Session, "list_directory", map[string]any{"path": dir})
	for _, sub := range []string{"review", "sync", "discard"} {
		for _, where := range []string{dir, filepath.Join(dir, "sub")} {
			t.Run(sub+"/"+filepath.Base(where), func(t *testing.T) {
				args := []string{sub}
				if sub == "discard" {
					args = append(args, "--yes")
				}
				_, stderr, code := plugin(t, where, args...)
				if code == 0 {
					t.Fatalf("%s without an instance succeeded", sub)
				}
				want := fmt.Sprintf("%s is staged in instance %q, not \"default\": name it, as in `limactl mcp %s %s`", where, instanceName, sub, instanceName)
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			})
		}
	}
	// Nothing was discarded.
	if st := statusOf(t, dir); st == nil {
		t.Error("the session is gone")
	}
}

func TestCommandsSuggestInstance(t *testing.T) {
	for _, sub := range []string{"status", "review", "sync", "discard"} {
		t.Run(sub, func(t *testing.T) {
			args := []string{"mcp", sub, "mcp-e2f"}
			if sub == "discard" {
				// Without a terminal and --yes, discard asks for --yes before it looks anything up.
				args = append(args, "--yes")
			}
			cmd := vm.Command(ctxT(t, time.Minute), "limactl", args...)
			cmd.Dir = sharedDir(t)
			_, stderr, err := runCmd(cmd)
			if err == nil {
				t.Fatalf("%s mcp-e2f succeeded", sub)
			}
			if want := `no such Lima instance "mcp-e2f": did you mean "` + instanceName + `"?`; !strings.Contains(stderr, want) {
				t.Errorf("%s mcp-e2f: stderr does not say %q:\n%s", sub, want, stderr)
			}
			// ... and gives the command meant, on that instance.
			if want := "`limactl mcp " + sub + " " + instanceName + "`"; !strings.Contains(stderr, want) {
				t.Errorf("%s mcp-e2f: stderr does not give %s:\n%s", sub, want, stderr)
			}
		})
	}
}
