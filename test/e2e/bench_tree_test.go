//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// benchTree10k makes the benchmarks' project of 10,000 files of 10 KiB (100 MiB) in 100
// directories, the same bytes every time (a fixed seed), owned by the VM's user: staging,
// checkpoints and forks are measured on it.
func benchTree10k(t *testing.T) string {
	const dirs, perDir, size = 100, 100, 10 << 10
	dir := project(t, map[string]string{})
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, size)
	for d := range dirs {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d))
		mustT(t, os.MkdirAll(sub, 0o755))
		for f := range perDir {
			for i := range buf {
				buf[i] = byte('a' + rng.IntN(26))
			}
			mustT(t, os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.txt", f)), buf, 0o644))
		}
	}
	chownToUser(t, dir)
	return dir
}
