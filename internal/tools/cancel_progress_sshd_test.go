package tools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
)

// A cancelled MCP request (notifications/cancelled from a real client) kills the command's
// whole process group in the guest, and the server goes on answering.
func TestCancelledRequestKillsTheCommand(t *testing.T) {
	srv := sshd.Start(t)
	conn := guesttest.Connect(t, srv, guest.Options{})
	cs := session(t, conn, srv.Home)
	marker := fmt.Sprintf("/tmp/limactl-mcp-cancel-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_shell_command", Arguments: map[string]any{
		"directory": "/", "command": []string{"bash", "-c", "(sleep 4; touch " + marker + ") & sleep 60"},
	}})
	if err == nil {
		t.Fatal("the call was not cancelled")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancelling took %v", d)
	}
	time.Sleep(5 * time.Second)
	if out := srv.Run(t, "sh", "-c", "test -e "+marker+" && echo survived || echo killed"); out != "killed\n" {
		t.Errorf("the background child of a cancelled command %s", out)
	}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_shell_command", Arguments: map[string]any{"directory": "/", "command": []string{"true"}}})
	if err != nil || r.IsError {
		t.Errorf("after the cancel: %v %v", err, r)
	}
}

// A call that waits for staging gets MCP progress notifications when it carries a token.
func TestStagingProgressReachesTheClient(t *testing.T) {
	srv := sshd.Start(t)
	conn := guesttest.Connect(t, srv, guest.Options{})
	host := filepath.Join(t.TempDir(), "proj")
	for d := range 40 {
		dir := filepath.Join(host, fmt.Sprintf("d%02d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range 50 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", f)), []byte(strings.Repeat("x", 50_000)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	gpath := fmt.Sprintf("%s/progress-%d/proj", srv.Home, time.Now().UnixNano())
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", filepath.Dir(gpath)) })
	store := staging.Store{Dir: filepath.Join(t.TempDir(), "state")}
	// Staging starts with the first call (not at server start), so the call waits for all of it.
	src := tools.NewStaged(context.Background(), func(ctx context.Context, progress func(staging.Progress)) (*staging.Session, error) {
		s, _, err := staging.Open(ctx, conn, store, staging.OpenOptions{Workdir: host, GuestPath: gpath, Progress: progress})
		return s, err
	})
	var notes atomic.Int32
	var last atomic.Value
	cs := serve(t, tools.New(conn, src, tools.DefaultLimits, src), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			notes.Add(1)
			last.Store(req.Params.Message)
		},
	})
	params := &mcp.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": host}}
	params.SetProgressToken("staging-1")
	r, err := cs.CallTool(context.Background(), params)
	if err != nil || r.IsError {
		t.Fatalf("list_directory: %v %v", err, r)
	}
	if notes.Load() == 0 {
		t.Error("no progress notification while staging 100 MB")
	} else if msg, _ := last.Load().(string); !strings.Contains(msg, "staging the working directory") {
		t.Errorf("progress message %q", msg)
	}
}
