package tools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
)

// The tools on a staged copy at another guest path: host paths in, host paths out, and the
// host directory untouched.
func TestStagedWorkspaceTranslatesPaths(t *testing.T) {
	srv := sshd.Start(t)
	conn := guesttest.Connect(t, srv, guest.Options{})
	host := filepath.Join(t.TempDir(), "proj")
	if err := os.MkdirAll(filepath.Join(host, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "src", "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gpath := fmt.Sprintf("%s/staged-%d/proj", srv.Home, time.Now().UnixNano())
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", filepath.Dir(gpath)) })
	store := staging.Store{Dir: filepath.Join(t.TempDir(), "state")}
	src := tools.NewStaged(context.Background(), func(ctx context.Context, progress func(staging.Progress)) (*staging.Session, error) {
		s, _, err := staging.Open(ctx, conn, store, staging.OpenOptions{Workdir: host, GuestPath: gpath, Progress: progress})
		return s, err
	})
	cs := serve(t, tools.New(conn, src, tools.DefaultLimits, src), nil)

	r := toolsuite.MustOK(t, cs, "read_file", map[string]any{"path": host + "/src/a.go"})
	if r.Structured["content"] != "package a\n" {
		t.Errorf("read through the staged copy: %v", r.Structured)
	}
	toolsuite.MustOK(t, cs, "write_file", map[string]any{"path": host + "/src/b.go", "content": "package a // b\n"})
	toolsuite.MustOK(t, cs, "replace", map[string]any{"file_path": host + "/src/a.go", "old_string": "package a", "new_string": "package a // edited"})
	if _, err := os.Stat(filepath.Join(host, "src", "b.go")); err == nil {
		t.Error("write_file reached the host")
	}
	if data, _ := os.ReadFile(filepath.Join(host, "src", "a.go")); string(data) != "package a\n" {
		t.Errorf("replace reached the host: %q", data)
	}
	if got := srv.Run(t, "cat", gpath+"/src/b.go"); got != "package a // b\n" {
		t.Errorf("guest copy: %q", got)
	}
	r = toolsuite.MustOK(t, cs, "glob", map[string]any{"pattern": "**/*.go"})
	if got := fmt.Sprint(r.Structured["matches"]); got != fmt.Sprintf("[%s/src/a.go %s/src/b.go]", host, host) {
		t.Errorf("glob (default dir = workdir): %s", got)
	}
	r = toolsuite.MustOK(t, cs, "run_shell_command", map[string]any{"directory": host + "/src", "command": []string{"sh", "-c", "pwd; ls $PWD/a.go; cat nope 2>&1 || true"}})
	if out := r.Structured["stdout"].(string); !strings.HasPrefix(out, host+"/src\n"+host+"/src/a.go\n") || strings.Contains(out, gpath) {
		t.Errorf("guest paths not translated in output: %q", out)
	}
	r = toolsuite.MustOK(t, cs, "search_file_content", map[string]any{"pattern": "edited"})
	if r.Structured["git_grep_output"] != "src/a.go:1:package a // edited\n" {
		t.Errorf("search: %v", r.Structured)
	}
	r = toolsuite.MustOK(t, cs, "pending_changes", map[string]any{})
	if got := fmt.Sprint(r.Structured["changes"]); got != fmt.Sprintf("[map[kind:modified path:%s/src/a.go] map[kind:added path:%s/src/b.go]]", host, host) {
		t.Errorf("pending: %s", got)
	}
	r = toolsuite.MustOK(t, cs, "pending_changes", map[string]any{"path": host + "/src/a.go"})
	if d := r.Structured["diff"].(string); !strings.Contains(d, "-package a\n+package a // edited\n") {
		t.Errorf("diff: %q", d)
	}
	toolsuite.MustError(t, cs, "pending_changes", map[string]any{"path": "/etc/hosts"}, "outside the working directory")
	toolsuite.MustError(t, cs, "pending_changes", map[string]any{"path": host + "/src/zzz.go"}, "no pending change")
}
