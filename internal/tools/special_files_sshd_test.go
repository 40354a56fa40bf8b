package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// No tool call blocks on a special file or reads one without end: a fifo nobody writes (its
// open would block the guest's sftp server) and a link to /dev/zero (no size, no end) each get
// a clear isError result, quickly.
func TestToolsRefuseSpecialFiles(t *testing.T) {
	srv := sshd.Start(t)
	dir := fmt.Sprintf("%s/special-%d", srv.Home, time.Now().UnixNano())
	srv.Run(t, "bash", "-c", "mkdir -p "+dir+" && mkfifo "+dir+"/fifo && ln -s /dev/zero "+dir+"/zero")
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", dir) })
	cs := session(t, guesttest.Connect(t, srv, guest.Options{}), dir)
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"replace", map[string]any{"file_path": dir + "/zero", "old_string": "a", "new_string": "b"}},
		{"replace", map[string]any{"file_path": dir + "/fifo", "old_string": "a", "new_string": "b"}},
		{"write_file", map[string]any{"path": dir + "/fifo", "content": "x"}},
		{"write_file", map[string]any{"path": dir + "/zero", "content": "x"}},
		{"read_file", map[string]any{"path": dir + "/fifo"}},
		{"read_file", map[string]any{"path": dir + "/zero"}},
	}
	for _, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		cancel()
		if err != nil {
			t.Errorf("%s %v: %v (after %s)", c.tool, c.args, err, time.Since(start))
			continue
		}
		text := ""
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if !res.IsError || !strings.Contains(text, "not a regular file") {
			t.Errorf("%s %v: isError=%v %q", c.tool, c.args, res.IsError, text)
		}
	}
}

// A directory of more entries than one listing holds: list_directory returns the first 10,000
// by name and says it is truncated, through the runner, instead of reading everything.
func TestListDirectoryIsBounded(t *testing.T) {
	srv := sshd.Start(t)
	dir := fmt.Sprintf("%s/huge-%d", srv.Home, time.Now().UnixNano())
	srv.Run(t, "bash", "-c", "mkdir -p "+dir+" && cd "+dir+" && seq -f 'f%05g' 1 12000 | xargs touch")
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", dir) })
	cs := session(t, guesttest.Connect(t, srv, guest.Options{}), dir)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": dir}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	var out struct {
		Entries   []struct{ Name string } `json:"entries"`
		Truncated bool                    `json:"truncated"`
	}
	data, _ := json.Marshal(res.StructuredContent)
	must(t, json.Unmarshal(data, &out))
	if len(out.Entries) != 10000 || !out.Truncated {
		t.Errorf("%d entries, truncated=%v", len(out.Entries), out.Truncated)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
