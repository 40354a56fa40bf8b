package review_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
)

// TestBuildSpeed500 measures review.Build against the real sshd on loopback, the case of
// issue 28: 500 changed files (one line each) in a 10,000-file tree, staged and then changed
// at once (so every baseline file is "racily clean", as in the VM benchmark
// TestBenchmarkReview500). It logs the phases (the guest scan and hashes, then the rest of
// Build: reading the 500 files and describing them) of three builds on one connection, and
// never asserts on times. Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -count=1 -v -run TestBuildSpeed500 ./internal/review/
func TestBuildSpeed500(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the review speed benchmark")
	}
	const dirs, perDir = 100, 100
	f := bareFx(t, "speed")
	var body strings.Builder
	for i := range 40 {
		fmt.Fprintf(&body, "line %d of a generated file\n", i)
	}
	for d := range dirs {
		for i := range perDir {
			f.write(filepath.Join(fmt.Sprintf("pkg%03d", d), fmt.Sprintf("file%03d.txt", i)), body.String(), 0o644)
		}
	}
	f.open()
	f.guest("for d in pkg*; do for n in 010 030 050 070 090; do sed -i 's/^line 20 of/line twenty of/' $d/file$n.txt; done; done")
	ctx := context.Background()
	for run := range 3 {
		t0 := time.Now()
		gcs, err := f.sess.GuestChangesAll(ctx)
		must(t, err)
		changes := time.Since(t0)
		t1 := time.Now()
		cs, err := review.Build(ctx, f.sess, nil)
		must(t, err)
		build := time.Since(t1)
		n := 0
		for _, it := range cs.Items {
			if it.Refused == "" && len(it.Hunks) == 1 {
				n++
			}
		}
		if n != 500 {
			t.Fatalf("run %d: %d of the 500 changed files have one hunk (%d items)", run, n, len(cs.Items))
		}
		t.Logf("run %d: guest changes (scan of %d, %d hashed) %v; review.Build %v (of which reading and describing the files about %v)",
			run, gcs.Scanned, gcs.Hashed, changes.Round(time.Millisecond), build.Round(time.Millisecond), (build - changes).Round(time.Millisecond))
	}
}
