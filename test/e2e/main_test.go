//go:build e2e

// Package e2e runs limactl-mcp end to end: our binary, built from this tree, serving MCP over
// stdio against one real Lima v2.2.0 VM (QEMU TCG, the kit in hack/e2e), both directly and
// through Lima's plugin discovery (`limactl mcp serve`), next to Lima's own bundled plugin.
//
//	go test -tags e2e -count=1 -v ./test/e2e/
//
// LIMACTL_MCP_E2E_KEEP=1 keeps the VM between runs (saves the ~50 s boot while iterating).
// The benchmark against Lima's bundled server runs only with LIMACTL_MCP_BENCH=1 (see
// docs/benchmarks.md).
package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/limavm"
)

// instanceName is the Lima instance shared by every test of this package.
const instanceName = "mcp-e2e"

var (
	vm *limavm.VM
	// ourBin is our freshly built plugin, in vm.BinDir (first on vm.Env's PATH, so that
	// `limactl mcp` finds it before Lima's bundled one in prefix/libexec/lima).
	ourBin string
	// limaBin is Lima's bundled plugin, the baseline.
	limaBin string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		return m.Run() // `go test -list`: no build, no VM
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "\n*** test/e2e: "+format+"\n*** the end-to-end tests did NOT run\n\n", args...)
		return 1
	}

	// Build first: a broken build should fail in seconds, not after a boot.
	tmp, err := os.MkdirTemp("", "limactl-mcp-e2e-build-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	built := filepath.Join(tmp, "limactl-mcp")
	repoRoot, err := repoRoot()
	if err != nil {
		return fail("%v", err)
	}
	t0 := time.Now()
	build := exec.Command("go", "build", "-o", built, "./cmd/limactl-mcp")
	build.Dir = repoRoot
	var buildOut bytes.Buffer
	build.Stdout, build.Stderr = &buildOut, &buildOut
	if err := build.Run(); err != nil {
		return fail("building ./cmd/limactl-mcp failed: %v\n%s", err, buildOut.String())
	}
	fmt.Fprintf(os.Stderr, "test/e2e: built limactl-mcp in %s\n", time.Since(t0).Round(100*time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t0 = time.Now()
	v, err := limavm.Boot(ctx, instanceName)
	cancel()
	if err != nil {
		return fail("booting the Lima VM %q failed:\n%v", instanceName, err)
	}
	vm = v
	fmt.Fprintf(os.Stderr, "test/e2e: VM %q ready in %s\n", instanceName, time.Since(t0).Round(100*time.Millisecond))

	code := func() int {
		ourBin = filepath.Join(vm.BinDir, "limactl-mcp")
		if err := installBinary(built, ourBin); err != nil {
			return fail("installing limactl-mcp into %s: %v", vm.BinDir, err)
		}
		limaBin = filepath.Join(vm.KitDir, "prefix/libexec/lima/limactl-mcp")
		if st, err := os.Stat(limaBin); err != nil || st.Mode().Perm()&0o111 == 0 {
			return fail("Lima's bundled plugin is missing at %s (run hack/e2e/setup.sh): %v", limaBin, err)
		}
		return m.Run()
	}()

	if !limavm.Keep() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		if err := vm.Delete(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
		cancel()
	} else {
		fmt.Fprintf(os.Stderr, "test/e2e: keeping VM %q (%s=1); LIMA_HOME=%s\n", instanceName, limavm.EnvKeep, vm.LimaHome)
	}
	return code
}

// installBinary copies src to dst (0755) through a temporary file and a rename, so that a
// server still running from an earlier copy is not disturbed.
func installBinary(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// repoRoot is the directory with go.mod above the working directory (test/e2e).
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(data), "module github.com/limactl-mcp/limactl-mcp") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of github.com/limactl-mcp/limactl-mcp above %s", wd)
		}
	}
}
