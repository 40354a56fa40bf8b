package runner

import (
	"os"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runner/background"
)

// TestMain lets the test binary be a background supervisor: an in-process runner starts its
// supervisors from its own binary (/proc/self/exe), which here is this one.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == background.SupervisorArg {
		if err := background.Supervise(os.Args[2]); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
