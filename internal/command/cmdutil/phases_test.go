package cmdutil

import (
	"bytes"
	"regexp"
	"testing"
)

// The steps are told only with LIMACTL_MCP_DEBUG=1, one line each with its time.
func TestPhasesOnlyWithDebug(t *testing.T) {
	var b bytes.Buffer
	t.Setenv("LIMACTL_MCP_DEBUG", "")
	NewPhases(&b, "review").Done("built")
	if b.Len() != 0 {
		t.Errorf("without LIMACTL_MCP_DEBUG: %q", b.String())
	}
	t.Setenv("LIMACTL_MCP_DEBUG", "1")
	p := NewPhases(&b, "review")
	p.Done("opened")
	p.Done("built")
	if !regexp.MustCompile(`^debug: review: opened in \S+ \(\S+ since the start\)\ndebug: review: built in \S+ \(\S+ since the start\)\n$`).MatchString(b.String()) {
		t.Errorf("with LIMACTL_MCP_DEBUG=1: %q", b.String())
	}
	var nilPhases *Phases
	nilPhases.Done("nothing") // a command without timing
}
