//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	// inspectorDirEnv names the directory hack/e2e/install-inspector.sh installed the MCP
	// Inspector into, when not the default.
	inspectorDirEnv     = "LIMACTL_MCP_INSPECTOR_DIR"
	defaultInspectorDir = "/var/cache/limactl-mcp-inspector"
	inspectorPackage    = "@modelcontextprotocol/inspector"
)

// inspectorCLI returns the path of the MCP Inspector's CLI installed by
// hack/e2e/install-inspector.sh. A missing or outdated installation fails the test: the
// Inspector is part of the end-to-end kit, not an optional extra.
func inspectorCLI(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(inspectorDirEnv)
	if dir == "" {
		dir = defaultInspectorDir
	}
	script := filepath.Join(vm.RepoRoot, "hack/e2e/install-inspector.sh")
	fix := fmt.Sprintf("run, as root: hack/e2e/install-inspector.sh %s (the CI entry point .ci/run must run it before the tests)", dir)

	src, err := os.ReadFile(script)
	mustT(t, err)
	m := regexp.MustCompile(`(?m)^INSPECTOR_VERSION=(\S+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("no INSPECTOR_VERSION=... line in %s", script)
	}
	pinned := string(m[1])

	bin := filepath.Join(dir, "node_modules/.bin/mcp-inspector")
	var pkg struct {
		Version string `json:"version"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "node_modules", inspectorPackage, "package.json"))
	if err != nil {
		t.Fatalf("the MCP Inspector (%s@%s) is not installed in %s (%v): %s", inspectorPackage, pinned, dir, err, fix)
	}
	mustT(t, json.Unmarshal(data, &pkg))
	if pkg.Version != pinned {
		t.Fatalf("the MCP Inspector in %s is version %s, hack/e2e/install-inspector.sh pins %s: %s", dir, pkg.Version, pinned, fix)
	}
	if st, err := os.Stat(bin); err != nil || st.Mode().Perm()&0o001 == 0 {
		t.Fatalf("the MCP Inspector's CLI %s is missing or not executable by others (%v): %s", bin, err, fix)
	}
	// It runs as the unprivileged user (who runs limactl), with the node on vm.Env's PATH.
	out, stderr, err := runCmd(vm.Command(ctxT(t, time.Minute), bin, "--cli", "--version"))
	if err != nil {
		t.Fatalf("%s --cli --version, as %q: %v\nstdout: %s\nstderr: %s\n(is node >= 20 on PATH? %s)", bin, vm.User, err, out, stderr, fix)
	}
	if got := strings.TrimSpace(out); got != pinned {
		t.Fatalf("%s --cli --version = %q, want %s: %s", bin, got, pinned, fix)
	}
	return bin
}

// inspector runs the Inspector's CLI as the user, in dir, against our server over stdio
// (the Inspector spawns `limactl-mcp serve mcp-e2e` in dir), and returns the "result" member
// of its JSON output. A failed run (a tool result with isError included: exit status 5) fails
// the test.
func inspector(t *testing.T, bin, dir string, args ...string) json.RawMessage {
	t.Helper()
	stdout, stderr, err := inspectorRun(t, bin, dir, args...)
	if err != nil {
		t.Fatalf("mcp-inspector %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return inspectorResult(t, stdout, stderr, args)
}

// inspectorResult is the result of the Inspector's JSON output.
func inspectorResult(t *testing.T, stdout, stderr string, args []string) json.RawMessage {
	t.Helper()
	var out struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || len(out.Result) == 0 {
		t.Fatalf("mcp-inspector %s: stdout is not {\"result\": ...} (%v):\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return out.Result
}

// inspectorRun runs the Inspector's CLI with args against our server in dir.
func inspectorRun(t *testing.T, bin, dir string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	argv := []string{"--cli", "--format", "json", "--connect-timeout", "120000", "--cwd", dir}
	// The Inspector passes the server only HOME, LOGNAME, PATH, SHELL, TERM and USER of its own
	// environment: the rest (LIMA_HOME, QEMU_SYSTEM_X86_64, ...) goes with -e.
	for _, kv := range vm.Env {
		argv = append(argv, "-e", kv)
	}
	argv = append(argv, args...)
	argv = append(argv, "--", ourBin, "serve", instanceName)
	cmd := vm.Command(ctxT(t, 5*time.Minute), bin, argv...)
	cmd.Dir = dir
	t0 := time.Now()
	stdout, stderr, err = runCmd(cmd)
	t.Logf("mcp-inspector --cli ... %s -- %s serve %s (%s)", strings.Join(args, " "), ourBin, instanceName, time.Since(t0).Round(time.Millisecond))
	return stdout, stderr, err
}

// inspectorCall runs tools/call of tool with --tool-arg KEY=VALUE pairs (the Inspector
// JSON-parses each VALUE, falling back to the string) and returns the tool's structured
// result, failing the test on an error result.
func inspectorCall(t *testing.T, bin, dir, tool string, pairs ...string) map[string]any {
	t.Helper()
	args := []string{"--method", "tools/call", "--tool-name", tool}
	for _, p := range pairs {
		args = append(args, "--tool-arg", p)
	}
	raw := inspector(t, bin, dir, args...)
	var res struct {
		IsError           bool             `json:"isError"`
		Content           []map[string]any `json:"content"`
		StructuredContent map[string]any   `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("tools/call %s: result %s: %v", tool, raw, err)
	}
	if res.IsError || res.StructuredContent == nil {
		t.Fatalf("tools/call %s %v: error or no structured content: %s", tool, pairs, raw)
	}
	return res.StructuredContent
}

// inspectorCallError is inspectorCall for a call that must answer with an error result; it
// returns the error's text.
func inspectorCallError(t *testing.T, bin, dir, tool string, pairs ...string) string {
	t.Helper()
	args := []string{"--method", "tools/call", "--tool-name", tool}
	for _, p := range pairs {
		args = append(args, "--tool-arg", p)
	}
	// The Inspector exits with status 5 for an error result, and prints it.
	stdout, stderr, _ := inspectorRun(t, bin, dir, args...)
	raw := inspectorResult(t, stdout, stderr, args)
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || !res.IsError || len(res.Content) == 0 {
		t.Fatalf("tools/call %s %v: not an error result (%v): %s", tool, pairs, err, raw)
	}
	return res.Content[0].Text
}

// TestInspectorCLI drives our server with the official MCP Inspector (CLI mode, stdio): it
// lists the tools and calls each one with valid arguments. Every call is a fresh server process
// that resumes the staged working directory, so the calls also see each other's work.
func TestInspectorCLI(t *testing.T) {
	bin := inspectorCLI(t)
	dir := project(t, map[string]string{"hello.txt": "hello, Inspector\n"})
	discardOnCleanup(t, dir)

	// Every tool the server lists must be called below.
	wantTools := []string{"list_directory", "read_file", "write_file", "replace", "glob", "search_file_content", "run_shell_command", "pending_changes",
		"read_background_output", "list_background_processes", "kill_background_process",
		"checkpoint", "list_checkpoints", "restore_checkpoint"}
	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	mustT(t, json.Unmarshal(inspector(t, bin, dir, "--method", "tools/list"), &list))
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema["type"] != "object" {
			t.Errorf("tool %s: inputSchema %v", tool.Name, tool.InputSchema)
		}
	}
	slices.Sort(names)
	sortedWant := slices.Sorted(slices.Values(wantTools))
	if !slices.Equal(names, sortedWant) {
		t.Fatalf("tools/list names = %v, want %v (a new tool needs a tools/call in this test)", names, sortedWant)
	}

	t.Run("list_directory", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "list_directory", "path="+dir)
		if b, _ := json.Marshal(st["entries"]); !strings.Contains(string(b), `"name":"hello.txt"`) {
			t.Errorf("entries: %s", b)
		}
	})
	t.Run("read_file", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "read_file", "path="+dir+"/hello.txt")
		if st["content"] != "hello, Inspector\n" {
			t.Errorf("content: %v", st)
		}
	})
	t.Run("write_file", func(t *testing.T) {
		inspectorCall(t, bin, dir, "write_file", "path="+dir+"/inspector.txt", "content=written by the MCP Inspector")
		if got := guestShell(t, "cat "+shq(dir+"/inspector.txt")); got != "written by the MCP Inspector" {
			t.Errorf("guest file: %q", got)
		}
	})
	t.Run("replace", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "replace", "file_path="+dir+"/inspector.txt", "old_string=written", "new_string=edited")
		if st["replacements"] != 1.0 {
			t.Errorf("result: %v", st)
		}
		if got := guestShell(t, "cat "+shq(dir+"/inspector.txt")); got != "edited by the MCP Inspector" {
			t.Errorf("guest file: %q", got)
		}
	})
	t.Run("glob", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "glob", "pattern=*.txt", "path="+dir)
		b, _ := json.Marshal(st["matches"])
		for _, f := range []string{"hello.txt", "inspector.txt"} {
			if !strings.Contains(string(b), `"`+dir+"/"+f+`"`) {
				t.Errorf("matches %s lack %s", b, f)
			}
		}
	})
	t.Run("search_file_content", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "search_file_content", "pattern=edited by", "path="+dir)
		if out, _ := st["git_grep_output"].(string); !strings.Contains(out, "inspector.txt") || !strings.Contains(out, "edited by the MCP Inspector") {
			t.Errorf("git_grep_output: %v", st)
		}
	})
	t.Run("run_shell_command", func(t *testing.T) {
		// An array argument: --tool-arg JSON-parses the value.
		st := inspectorCall(t, bin, dir, "run_shell_command", `command=["uname","-a"]`, "directory="+dir)
		if out, _ := st["stdout"].(string); st["exit_code"] != 0.0 || !strings.HasPrefix(out, "Linux ") {
			t.Errorf("uname -a: %v", st)
		}
	})
	// Each Inspector call is a server of its own: a background process ends with it.
	t.Run("run_shell_command background", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "run_shell_command", `command=["sleep","300"]`, "directory="+dir, "background=true")
		pid, _ := st["pid"].(float64)
		if st["background_id"] != 1.0 || pid < 2 {
			t.Fatalf("result: %v", st)
		}
		if got := strings.TrimSpace(guestShell(t, fmt.Sprintf("kill -0 -%d 2>/dev/null && echo alive || echo gone", int(pid)))); got != "gone" {
			t.Errorf("the background process after its server exited: %s", got)
		}
	})
	t.Run("list_background_processes", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "list_background_processes")
		if b, _ := json.Marshal(st["processes"]); string(b) != "[]" {
			t.Errorf("processes of a new server: %s", b)
		}
	})
	t.Run("read_background_output", func(t *testing.T) {
		if e := inspectorCallError(t, bin, dir, "read_background_output", "id=1"); !strings.Contains(e, "no background process with id 1") {
			t.Errorf("error: %s", e)
		}
	})
	t.Run("kill_background_process", func(t *testing.T) {
		if e := inspectorCallError(t, bin, dir, "kill_background_process", "id=1"); !strings.Contains(e, "no background process with id 1") {
			t.Errorf("error: %s", e)
		}
	})
	t.Run("pending_changes", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "pending_changes")
		b, _ := json.Marshal(st["changes"])
		if !strings.Contains(string(b), `{"kind":"added","path":"`+dir+`/inspector.txt"}`) {
			t.Errorf("changes: %s", b)
		}
	})
	// Each Inspector call is a server of its own, the checkpoints are the session's: they stay.
	t.Run("checkpoint", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "checkpoint", "label=inspector")
		if st["id"] != 1.0 || st["label"] != "inspector" {
			t.Errorf("result: %v", st)
		}
	})
	t.Run("list_checkpoints", func(t *testing.T) {
		st := inspectorCall(t, bin, dir, "list_checkpoints")
		if b, _ := json.Marshal(st["checkpoints"]); !strings.Contains(string(b), `"label":"inspector"`) {
			t.Errorf("checkpoints: %s", b)
		}
	})
	t.Run("restore_checkpoint", func(t *testing.T) {
		guestShell(t, "echo changed > "+shq(dir+"/hello.txt"))
		st := inspectorCall(t, bin, dir, "restore_checkpoint", "id=1")
		if st["total"] != 1.0 || guestShell(t, "cat "+shq(dir+"/hello.txt")) != "hello, Inspector\n" {
			t.Errorf("result: %v", st)
		}
	})
}
