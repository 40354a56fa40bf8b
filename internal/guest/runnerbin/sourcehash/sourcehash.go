// Package sourcehash hashes the guest runner's source files.
package sourcehash

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// RunnerSourceDirs are the directories, relative to the repository root, whose Go files make
// up the runner.
// (TestRunnerSourceDirsCoverItsPackages checks the list against `go list -deps`.)
var RunnerSourceDirs = []string{"cmd/limactl-mcp-runner", "internal/runner", "internal/runner/background", "internal/runner/checkpoint", "internal/runner/procenv", "internal/runner/walk", "internal/atomicfile", "internal/runnerproto", "internal/globfs", "internal/gitgrep", "internal/headtail", "internal/shellquote", "internal/ignore", "internal/tree", "internal/netpolicy", "internal/netpolicy/enforce", "internal/keyauth"}

// HashSources hashes the runner's non-test Go files under repoRoot, (a change of dependency versions alone is not noticed).
func HashSources(repoRoot string) (string, error) {
	var files []string
	for _, d := range RunnerSourceDirs {
		ents, err := os.ReadDir(filepath.Join(repoRoot, d))
		if err != nil {
			return "", err
		}
		for _, e := range ents {
			n := e.Name()
			if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				files = append(files, filepath.ToSlash(filepath.Join(d, n)))
			}
		}
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			return "", err
		}
		h.Write([]byte(f + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
