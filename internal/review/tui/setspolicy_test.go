package tui

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// A change to a file that sets the agent's policy or configuration (.mcp.json, Claude Code's
// settings) is marked in the list, first on its row, in the full-screen TUI and in accessible
// mode; other files are not.
func TestTUIMarksPolicyFiles(t *testing.T) {
	t.Parallel()
	mcp := textItem(".mcp.json", staging.Modified, `{"mcpServers":{"lima":{"args":["serve","--network=none"]}}}`+"\n", `{"mcpServers":{"lima":{"args":["serve","--network=open"]}}}`+"\n")
	settings := textItem(".claude/settings.local.json", staging.Added, "", `{"permissions":{"allow":["Bash"]}}`+"\n")
	cs := &review.Changeset{Workdir: "/home/me/project", Items: []*review.Item{oneHunk(), mcp, settings}}

	s := startTUI(t, cs)
	scr := s.waitFor("M README.md  +1 −1", "⚠ POLICY M .mcp.json", "⚠ POLICY A .claude/settings.local.json")
	if strings.Contains(scr, "⚠ POLICY M README.md") {
		t.Errorf("README.md is marked:\n%s", scr)
	}
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Fatal("not aborted")
	}

	a := startTUI(t, cs, "-accessible")
	a.waitFor("Print the changes of every file first? [y/N]")
	a.typeLine("n")
	scr = a.waitFor("1. ✓ M README.md", "2. ✓ ⚠ POLICY M .mcp.json", "3. ✓ ⚠ POLICY A .claude/settings.local.json")
	if strings.Contains(scr, "⚠ POLICY M README.md") {
		t.Errorf("README.md is marked:\n%s", scr)
	}
}
