package servecmd

import (
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// A tree staged within 2 seconds logs no progress lines (issue 12: a 3-file tree logged
// "files=1/3", "files=2/3", ...); every step still reaches the client's progress.
func TestProgressLoggerQuietForSmallTrees(t *testing.T) {
	logs := &syncBuffer{}
	var seen int
	p := progressLogger(testLogger(logs), func(staging.Progress) { seen++ })
	for i := 1; i <= 3; i++ {
		p(staging.Progress{Files: i, TotalFiles: 3, Bytes: int64(i), TotalBytes: 3})
	}
	if seen != 3 || logs.String() != "" {
		t.Errorf("steps passed on: %d; logged:\n%s", seen, logs.String())
	}
}
