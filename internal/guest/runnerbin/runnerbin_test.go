package runnerbin

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerbin/sourcehash"
)

func TestEmbeddedRunnerMatchesSource(t *testing.T) {
	want, err := sourcehash.HashSources(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if got := SourceHash(); got != want {
		t.Fatalf("the embedded guest runner was built from other sources (%s, now %s): run `go generate ./internal/guest/runnerbin` and commit the result", got, want)
	}
}

func TestBinaryForEachArch(t *testing.T) {
	for _, arch := range []string{"x86_64", "aarch64", "amd64", "arm64"} {
		data, id, err := Binary(arch)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 1<<20 || string(data[1:4]) != "ELF" || len(id) != 12 {
			t.Fatalf("%s: not an ELF runner (%d bytes, id %q)", arch, len(data), id)
		}
		// What a start reads without decompressing must be what the bytes say.
		infoID, size, err := Info(arch)
		if err != nil || infoID != id || size != int64(len(data)) {
			t.Fatalf("%s: Info = %q, %d, %v; the binary has ID %q and %d bytes", arch, infoID, size, err, id, len(data))
		}
	}
	if _, _, err := Info("riscv64"); err == nil {
		t.Fatal("riscv64: want an error from Info")
	}
	if _, _, err := Binary("riscv64"); err == nil {
		t.Fatal("riscv64: want an error")
	}
}

// Every package of this module the runner is built from is in the source hash, so that a
// change to any of them asks for `go generate`.
func TestRunnerSourceDirsCoverItsPackages(t *testing.T) {
	const module = "github.com/limactl-mcp/limactl-mcp/"
	out, err := exec.Command("go", "list", "-deps", module+"cmd/limactl-mcp-runner").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := map[string]bool{}
	for _, d := range sourcehash.RunnerSourceDirs {
		listed[d] = true
	}
	for _, p := range strings.Fields(string(out)) {
		if dir, ok := strings.CutPrefix(p, module); ok && !listed[dir] {
			t.Errorf("the runner is built from %s, which sourcehash.RunnerSourceDirs leaves out", dir)
		}
	}
}
