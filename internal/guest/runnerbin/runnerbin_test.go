package runnerbin

import (
	"path/filepath"
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
	}
	if _, _, err := Binary("riscv64"); err == nil {
		t.Fatal("riscv64: want an error")
	}
}
