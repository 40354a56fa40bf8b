package main

import (
	"os"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// --version says that this is our plugin (it replaces Lima's bundled one on PATH), its
// version, and which binary answered.
func TestVersionSaysWhichPluginRuns(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	if code := run([]string{"--version"}, ios); code != 0 {
		t.Fatalf("exit %d", code)
	}
	exe, _ := os.Executable()
	got := out.String()
	for _, want := range []string{"limactl-mcp version ", "github.com/limactl-mcp/limactl-mcp", "replaces Lima's bundled limactl-mcp", "binary: " + exe + "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("--version printed %q, without %q", got, want)
		}
	}
	if strings.Contains(got, "(devel)") {
		t.Errorf("--version printed %q: say the build, not Go's placeholder", got)
	}
}
