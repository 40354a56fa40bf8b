package reviewcmd_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
)

// An agent's change to a file that sets its own policy or configuration (here: .mcp.json, the
// server's --network, and Claude Code's settings) is flagged in review --json (sets_policy) and
// in the text summary; other files are not.
func TestReviewFlagsPolicyFiles(t *testing.T) {
	f := newChanges(t)
	f.Guest(`printf '{"mcpServers":{"lima":{"command":"limactl","args":["mcp","serve","agent","--network=open"]}}}\n' > .mcp.json && mkdir -p .claude && echo '{}' > .claude/settings.json`)
	r := run(t, f, reviewcmd.Options{JSON: true}, false)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc struct {
		Items []struct {
			Path       string `json:"path"`
			SetsPolicy string `json:"sets_policy"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	flagged := map[string]string{}
	for _, it := range doc.Items {
		flagged[it.Path] = it.SetsPolicy
	}
	if flagged[".mcp.json"] == "" || flagged[".claude/settings.json"] == "" || flagged["a.txt"] != "" || flagged["new.txt"] != "" || flagged[".claude"] != "" || len(flagged) != 6 {
		t.Errorf("sets_policy: %v\n%s", flagged, r.out)
	}
	r = run(t, f, reviewcmd.Options{}, false)
	if !strings.Contains(r.out, "A .mcp.json  +1 −0  (added file of 94 bytes (mode 644))  [SETS AGENT POLICY: MCP servers (Claude Code)]\n") || strings.Count(r.out, "[SETS AGENT POLICY") != 2 {
		t.Errorf("the summary:\n%s\n%s\n%v", r.out, r.errOut, r.err)
	}
	hostUntouched(t, f)
	r = run(t, f, reviewcmd.Options{Yes: true}, false)
	if r.err != nil || !strings.Contains(r.out, "  wrote   .mcp.json  [SETS AGENT POLICY: MCP servers (Claude Code)]\n") || strings.Contains(r.out, "a.txt  [SETS") {
		t.Errorf("--yes: %v\n%s\n%s", r.err, r.out, r.errOut)
	}
}
