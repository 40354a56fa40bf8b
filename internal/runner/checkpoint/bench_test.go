package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// BenchmarkCheckpoint10k measures, in process on this machine, a checkpoint and a restore of a
// 10,000-file / 100 MB tree with 10 files changed each time (the first checkpoint is taken
// before the timer starts):
//
//	go test -run '^$' -bench Checkpoint10k ./internal/runner/checkpoint/
//
// The figures on the VM, as the agent sees them, are in docs/benchmarks.md.
func BenchmarkCheckpoint10k(b *testing.B) {
	home := b.TempDir()
	b.Setenv("HOME", home)
	root := filepath.Join(b.TempDir(), "proj")
	buf := make([]byte, 10<<10)
	for d := range 100 {
		sub := filepath.Join(root, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			for i := range buf {
				buf[i] = byte('a' + (d*f+i)%26)
			}
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.txt", f)), buf, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	tr := runnerproto.CkptTree{Session: "bench", Root: root}
	lim := runnerproto.CkptLimits{MaxEntries: 200_000, MaxStoreBytes: 8 << 30, MaxAuto: 10, MaxLabelled: 1000}
	cache := NewCache()
	create := func() string {
		res, err := Create(&runnerproto.CkptCreateRequest{Tree: tr, Limits: lim}, cache)
		if err != nil || res.Checkpoint == nil {
			b.Fatalf("%v %+v", err, res)
		}
		return res.Checkpoint.ID
	}
	change10 := func(n int) {
		for i := range 10 {
			p := filepath.Join(root, fmt.Sprintf("pkg%03d", (n*10+i)%100), fmt.Sprintf("file%03d.txt", i))
			if err := os.WriteFile(p, []byte(fmt.Sprint("round ", n)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	create()
	b.Run("checkpoint", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			change10(i)
			b.StartTimer()
			create()
		}
	})
	id := create()
	b.Run("restore", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			change10(1000 + i)
			b.StartTimer()
			if res, err := Restore(&runnerproto.CkptRestoreRequest{Tree: tr, ID: id, MaxChanges: 100}, cache); err != nil || res.Total != 10 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
}
