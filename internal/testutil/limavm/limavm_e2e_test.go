//go:build e2e

package limavm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/limavm"
)

const instanceName = "limavm-e2e"

var vm *limavm.VM

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t0 := time.Now()
	v, err := limavm.Boot(ctx, instanceName)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "limavm e2e: Boot returned in %s\n", time.Since(t0).Round(100*time.Millisecond))
	vm = v
	code := m.Run()
	if !limavm.Keep() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		if err := vm.Delete(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
		cancel()
	}
	os.Exit(code)
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestUname(t *testing.T) {
	stdout, stderr, err := vm.Shell(ctxT(t, time.Minute), "uname -a")
	if err != nil {
		t.Fatalf("uname: %v", err)
	}
	if !strings.HasPrefix(stdout, "Linux ") || !strings.Contains(stdout, "x86_64") {
		t.Errorf("uname -a = %q (stderr %q), want a Linux x86_64 guest", stdout, stderr)
	}
	t.Logf("guest: %s", strings.TrimSpace(stdout))
}

func TestListRunning(t *testing.T) {
	out, err := vm.Limactl(ctxT(t, time.Minute), "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var inst struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Dir    string `json:"dir"`
			VMType string `json:"vmType"`
			Config struct {
				Mounts []json.RawMessage `json:"mounts"`
			} `json:"config"`
		}
		if err := json.Unmarshal([]byte(line), &inst); err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		if inst.Name != vm.Name {
			continue
		}
		found = true
		if inst.Status != "Running" {
			t.Errorf("status = %q, want Running", inst.Status)
		}
		if want := filepath.Join(vm.LimaHome, vm.Name); inst.Dir != want {
			t.Errorf("dir = %q, want %q", inst.Dir, want)
		}
		if inst.VMType != "qemu" {
			t.Errorf("vmType = %q, want qemu", inst.VMType)
		}
		if len(inst.Config.Mounts) != 0 {
			t.Errorf("config has %d mounts, want none (--mount-none)", len(inst.Config.Mounts))
		}
	}
	if !found {
		t.Fatalf("limactl list --json does not list %q:\n%s", vm.Name, out)
	}
	if st, err := vm.Status(ctxT(t, time.Minute)); err != nil || st != "Running" {
		t.Errorf("Status() = %q, %v; want Running", st, err)
	}
}

func TestNoHostMounts(t *testing.T) {
	// Mount types Lima uses for host directories: 9p, virtiofs, reverse-sshfs (fuse.sshfs).
	script := fmt.Sprintf(`set -e
awk '$3 ~ /^(9p|virtiofs|fuse\.sshfs|fuse)$/ {print "mount: " $0}' /proc/mounts
for p in %q %q %q; do
  if [ -e "$p" ]; then echo "host path visible in guest: $p"; fi
done
echo "pwd=$(pwd) home=$HOME"
`, filepath.Join(vm.RepoRoot, "go.mod"), vm.LimaHome, vm.KitDir)
	stdout, stderr, err := vm.Shell(ctxT(t, time.Minute), script)
	if err != nil {
		t.Fatalf("%v\nstdout: %s", err, stdout)
	}
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if strings.HasPrefix(line, "mount: ") || strings.HasPrefix(line, "host path visible") {
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		t.Errorf("guest sees host mounts:\n%s\n(stderr %q)", strings.Join(bad, "\n"), stderr)
	}
	if !strings.Contains(stdout, "pwd=/ ") {
		t.Errorf("--workdir / not honoured: %q", stdout)
	}
	t.Log(strings.TrimSpace(stdout))
}

func TestShellQuotingAndStreams(t *testing.T) {
	script := `x='it'"'"'s $HOME "quoted"'; printf '%s\n' "$x"; echo to-stderr >&2; printf 'a\nb\n'; exit 0`
	stdout, stderr, err := vm.Shell(ctxT(t, time.Minute), script)
	if err != nil {
		t.Fatal(err)
	}
	if want := "it's $HOME \"quoted\"\na\nb\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	if !strings.Contains(stderr, "to-stderr") {
		t.Errorf("stderr = %q, want it to contain to-stderr", stderr)
	}
	_, _, err = vm.Shell(ctxT(t, time.Minute), "echo failing >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "failing") {
		t.Errorf("Shell(exit 3) error = %v, want an error that includes stderr", err)
	}
}

func TestCommandEnvAndBinDir(t *testing.T) {
	st, err := os.Stat(vm.BinDir)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("BinDir %s: %v, mode %v; want 0755", vm.BinDir, err, st.Mode())
	}
	// A program placed in BinDir is found by name and runs as vm.User with exactly vm.Env.
	prog := filepath.Join(vm.BinDir, "limavm-e2e-probe")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nid -un\nenv\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(prog) })
	out, err := vm.Command(ctxT(t, time.Minute), "limavm-e2e-probe").Output()
	if err != nil {
		t.Fatalf("running %s: %v", prog, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	wantUser := vm.User
	if wantUser == "" {
		wantUser = os.Getenv("USER")
	}
	if wantUser != "" && lines[0] != wantUser {
		t.Errorf("ran as %q, want %q", lines[0], wantUser)
	}
	got := slices.Clone(lines[1:])
	// sh itself adds PWD (and may add SHLVL/_); ignore those.
	got = slices.DeleteFunc(got, func(kv string) bool {
		return strings.HasPrefix(kv, "PWD=") || strings.HasPrefix(kv, "SHLVL=") || strings.HasPrefix(kv, "_=") || strings.HasPrefix(kv, "OLDPWD=")
	})
	want := slices.Clone(vm.Env)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("environment of the child:\n%s\nwant exactly:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBootIsIdempotent(t *testing.T) {
	t0 := time.Now()
	v, err := limavm.Boot(ctxT(t, 2*time.Minute), instanceName)
	if err != nil {
		t.Fatal(err)
	}
	if v != vm {
		t.Errorf("second Boot returned a different *VM")
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Errorf("second Boot took %s; want a quick reuse", d)
	}
	t.Logf("second Boot: %s", time.Since(t0).Round(time.Millisecond))
}

func TestShellLatency(t *testing.T) {
	const n = 5
	t0 := time.Now()
	for range n {
		if _, _, err := vm.Shell(ctxT(t, time.Minute), "true"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("limactl shell true: %s avg over %d", (time.Since(t0) / n).Round(time.Millisecond), n)
}
