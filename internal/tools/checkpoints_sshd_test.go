package tools_test

import (
	"context"
	"fmt"
	"os"
	"path"
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

// The agent checkpoints its copy, breaks it, and restores it: the exact tree is back, the host
// never changed, and the errors say what to do.
func TestCheckpointTools(t *testing.T) {
	srv := sshd.Start(t)
	conn := guesttest.Connect(t, srv, guest.Options{})
	host := filepath.Join(t.TempDir(), "proj")
	for rel, data := range map[string]string{"a.txt": "a\n", "src/b.go": "package b\n", "run.sh": "#!/bin/sh\n"} {
		os.MkdirAll(filepath.Join(host, filepath.Dir(rel)), 0o755)
		os.WriteFile(filepath.Join(host, rel), []byte(data), 0o644)
	}
	os.Chmod(filepath.Join(host, "run.sh"), 0o755)
	gpath := fmt.Sprintf("%s/ckpt-%d/proj", srv.Home, time.Now().UnixNano())
	t.Cleanup(func() {
		srv.Run(t, "rm", "-rf", filepath.Dir(gpath), path.Join(srv.Home, ".cache/limactl-mcp/checkpoints", staging.SessionID(host)))
	})
	store := staging.Store{Dir: filepath.Join(t.TempDir(), "state")}
	src := tools.NewStaged(context.Background(), func(ctx context.Context, progress func(staging.Progress)) (*staging.Session, error) {
		s, _, err := staging.Open(ctx, conn, store, staging.OpenOptions{Workdir: host, GuestPath: gpath, Progress: progress})
		return s, err
	})
	cs := serve(t, tools.New(conn, src, tools.DefaultLimits, src), nil)

	toolsuite.MustError(t, cs, "restore_checkpoint", map[string]any{"id": 1}, "has none")
	r := toolsuite.MustOK(t, cs, "checkpoint", map[string]any{"label": "before refactor"})
	if r.Structured["id"] != float64(1) || r.Structured["label"] != "before refactor" || r.Structured["files"] != float64(3) {
		t.Fatalf("checkpoint: %v", r.Structured)
	}
	listing := func() string {
		return srv.Run(t, "bash", "-c", "cd "+gpath+" && find . -path ./.git -prune -o -printf '%p %y %m %l\\n' | sort && cat a.txt src/b.go")
	}
	before := listing()

	toolsuite.MustOK(t, cs, "write_file", map[string]any{"path": host + "/a.txt", "content": "broken\n"})
	toolsuite.MustOK(t, cs, "run_shell_command", map[string]any{"directory": host, "command": []string{"sh", "-c", "rm src/b.go && chmod 600 run.sh && ln -s /etc x && mkdir -p new/dir"}})
	r = toolsuite.MustOK(t, cs, "restore_checkpoint", map[string]any{"id": 1})
	if got := fmt.Sprint(r.Structured["changes"]); !strings.Contains(got, "change:content path:"+host+"/a.txt") || !strings.Contains(got, "change:created path:"+host+"/src/b.go") || r.Structured["total"] != float64(6) {
		t.Errorf("restore: %v", r.Structured)
	}
	if after := listing(); after != before {
		t.Errorf("the tree after the restore:\n%s\nwant:\n%s", after, before)
	}
	if data, _ := os.ReadFile(filepath.Join(host, "a.txt")); string(data) != "a\n" {
		t.Errorf("the host changed: %q", data)
	}
	r = toolsuite.MustOK(t, cs, "pending_changes", map[string]any{})
	if got := fmt.Sprint(r.Structured["changes"]); got != "[]" {
		t.Errorf("pending after restoring the staged state: %s", got)
	}
	r = toolsuite.MustOK(t, cs, "list_checkpoints", map[string]any{})
	if cps := r.Structured["checkpoints"].([]any); len(cps) != 1 || cps[0].(map[string]any)["label"] != "before refactor" {
		t.Errorf("list: %v", r.Structured)
	}
	toolsuite.MustError(t, cs, "restore_checkpoint", map[string]any{"id": 7}, "list_checkpoints")
	toolsuite.MustError(t, cs, "checkpoint", map[string]any{"label": strings.Repeat("x", 201)}, "at most 200 bytes")
}
