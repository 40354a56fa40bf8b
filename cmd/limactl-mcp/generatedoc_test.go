package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// `generate-doc DIR` works as Lima's Makefile calls it (`$< generate-doc website/_output/docsy-mcp`):
// DIR is made, DIR/mcp.md has Lima's front matter and every tool; the command stays hidden.
func TestGenerateDocAsLimasMakefileCallsIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "website", "_output", "docsy-mcp")
	ios, _, out, errOut := iostreams.Test()
	if code := run([]string{"generate-doc", dir}, ios); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if !strings.HasPrefix(page, "---\ntitle: MCP tools\nweight: 99\n---\n") {
		t.Errorf("front matter: %q", page[:min(len(page), 80)])
	}
	for _, tool := range []string{"list_directory", "read_file", "write_file", "replace", "glob", "search_file_content", "run_shell_command", "pending_changes"} {
		if !strings.Contains(page, tool) {
			t.Errorf("mcp.md does not mention %s", tool)
		}
	}
	ios, _, out, _ = iostreams.Test()
	if code := run([]string{"--help"}, ios); code != 0 || strings.Contains(out.String(), "generate-doc") {
		t.Errorf("generate-doc shows in --help (exit %d):\n%s", code, out)
	}
}
