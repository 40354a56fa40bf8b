package tree

import (
	"os/exec"
	"strings"
	"testing"
)

// The guest runner links no terminal code: escaping text for a person (termsafe, and the
// width tables under it) happens on the host, at the edges, never in what both sides share.
func TestRunnerLinksNoTermsafe(t *testing.T) {
	const module = "github.com/limactl-mcp/limactl-mcp/"
	out, err := exec.Command("go", "list", "-deps", module+"cmd/limactl-mcp-runner").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	linksTree := false
	for _, p := range deps {
		switch p {
		case module + "internal/termsafe", "github.com/mattn/go-runewidth", "github.com/rivo/uniseg":
			t.Errorf("the runner links %s", p)
		case module + "internal/tree":
			linksTree = true
		}
	}
	if !linksTree {
		t.Error("the runner no longer links internal/tree: is this test still looking at the right binary?")
	}
}
