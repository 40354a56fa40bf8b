// Package limavm boots one real Lima VM (Lima v2.2.0, QEMU TCG, the kit in hack/e2e) for the
// end-to-end tests of a test binary and shares it between the tests.
//
// Typical use, in a package's e2e test file (build tag e2e):
//
//	var vm *limavm.VM
//
//	func TestMain(m *testing.M) {
//		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
//		v, err := limavm.Boot(ctx, "mypkg-e2e") // one distinct name per test binary
//		cancel()
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		vm = v
//		code := m.Run()
//		if !limavm.Keep() {
//			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
//			if err := vm.Delete(ctx); err != nil {
//				fmt.Fprintln(os.Stderr, err)
//			}
//			cancel()
//		}
//		os.Exit(code)
//	}
//
// The host must have been prepared once with `sudo hack/e2e/setup.sh`.
//
// limactl refuses to run as root, so when the tests run as root every limactl (and plugin)
// process is started as an unprivileged user (LIMA_USER, default "limatest") through runuser.
//
// Environment knobs: KIT_DIR (default /var/cache/lima-vm-kit), LIMA_USER (default limatest),
// LIMACTL_MCP_E2E_DIR (default /var/tmp/limactl-mcp-e2e; holds lima/, bin/, locks/, templates/),
// LIMACTL_MCP_E2E_KEEP=1 (see Keep).
//
// Test binaries run in parallel under `go test ./...`: give each its own instance name. Boot
// takes a per-name file lock, held until Delete (or the process exits), so two binaries that do
// use the same name take turns instead of breaking each other's VM.
package limavm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// DefaultKitDir is where hack/e2e/setup.sh puts limactl, the guest agent and the image.
	DefaultKitDir = "/var/cache/lima-vm-kit"
	// DefaultBaseDir holds LIMA_HOME (lima/), BinDir (bin/), locks/ and templates/.
	DefaultBaseDir = "/var/tmp/limactl-mcp-e2e"
	// DefaultUser runs limactl when the tests run as root.
	DefaultUser = "limatest"
	// EnvKeep, set to 1, asks TestMain not to delete the VM at the end (see Keep).
	EnvKeep = "LIMACTL_MCP_E2E_KEEP"

	// QEMUSystemX8664 forces QEMU's software emulation: /dev/kvm on the project's machines only
	// runs PVM guests, and an explicit -machine stops Lima from adding accel=kvm.
	QEMUSystemX8664 = "qemu-system-x86_64 -machine q35,vmport=off -accel tcg,thread=multi,tb-size=512"

	// BootTimeout bounds `limactl start` (first boot of the fast image takes about a minute).
	BootTimeout = 6 * time.Minute

	imageFlavor = "fast"
)

// VM is a running Lima instance shared by the tests of one test binary.
type VM struct {
	Name     string   // instance name
	LimaHome string   // LIMA_HOME used (a dir owned by the unprivileged user)
	User     string   // host user that runs limactl ("limatest" when we are root; "" = current user)
	KitDir   string   // $KIT_DIR (default /var/cache/lima-vm-kit)
	RepoRoot string   // repository root (found by walking up to go.mod)
	BinDir   string   // world-readable directory (0755) for test binaries; first on PATH in Env
	Env      []string // complete environment for limactl and our plugin

	// BootDuration is how long the last Boot took to get the instance running (0 when it was
	// already running).
	BootDuration time.Duration

	baseDir string
	runuser string // path of runuser, when User != "" and we are root
	lock    *os.File
}

// Keep reports whether LIMACTL_MCP_E2E_KEEP=1: TestMain should then leave the VM running
// (the next run reuses it, which saves the boot).
func Keep() bool { return os.Getenv(EnvKeep) == "1" }

var (
	bootMu sync.Mutex
	booted = map[string]*VM{} // LimaHome + "/" + Name -> VM, for as long as we hold its lock
)

// Boot starts (or reuses, if already running under the same LimaHome) an instance created with
// --mount-none from the kit's `fast` image and template (hack/e2e/template.yaml.in). It fails
// with an explanatory error if the kit is not set up. Idempotent and safe to call from TestMain;
// calling it again after Stop starts the instance again.
func Boot(ctx context.Context, name string) (*VM, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	bootMu.Lock()
	defer bootMu.Unlock()

	cfg, err := resolveConfig()
	if err != nil {
		return nil, err
	}
	key := filepath.Join(cfg.limaHome, name)
	vm := booted[key]
	if vm == nil {
		if err := cfg.prepareDirs(); err != nil {
			return nil, err
		}
		vm = cfg.newVM(name)
		if err := vm.fixSSHWrapPath(ctx); err != nil {
			return nil, err
		}
		lock, err := acquireLock(ctx, filepath.Join(cfg.baseDir, "locks", name+".lock"))
		if err != nil {
			return nil, fmt.Errorf("limavm: lock for instance %q: %w", name, err)
		}
		vm.lock = lock
		booted[key] = vm
	}
	if err := vm.ensureRunning(ctx); err != nil {
		return nil, err
	}
	return vm, nil
}

func validName(name string) error {
	if name == "" || len(name) > 40 {
		return fmt.Errorf("limavm: invalid instance name %q (1-40 characters)", name)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			(i > 0 && (r == '-' || r == '_' || r == '.'))
		if !ok {
			return fmt.Errorf("limavm: invalid instance name %q (letters, digits, '-', '_', '.'; start with a letter or digit)", name)
		}
	}
	return nil
}

// instanceInfo is the part of `limactl list --json` we use.
type instanceInfo struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Dir    string `json:"dir"`
}

// Info returns the instance's name, status ("Running", "Stopped", "Broken", ...) and directory
// as reported by `limactl list --json NAME`.
func (vm *VM) info(ctx context.Context) (*instanceInfo, error) {
	out, err := vm.output(ctx, "limactl", "list", "--json", vm.Name)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var ii instanceInfo
		if err := json.Unmarshal([]byte(line), &ii); err != nil {
			return nil, fmt.Errorf("limavm: parsing `limactl list --json %s`: %w: %s", vm.Name, err, line)
		}
		if ii.Name == vm.Name {
			return &ii, nil
		}
	}
	return nil, fmt.Errorf("limavm: `limactl list --json %s` did not report the instance: %q", vm.Name, out)
}

// Status returns the instance status reported by `limactl list --json` ("Running", "Stopped",
// "Broken", ...), or "" when the instance does not exist.
func (vm *VM) Status(ctx context.Context) (string, error) {
	if !vm.exists() {
		return "", nil
	}
	ii, err := vm.info(ctx)
	if err != nil {
		return "", err
	}
	return ii.Status, nil
}

func (vm *VM) instDir() string { return filepath.Join(vm.LimaHome, vm.Name) }

func (vm *VM) exists() bool {
	_, err := os.Stat(filepath.Join(vm.instDir(), "lima.yaml"))
	return err == nil
}

func (vm *VM) ensureRunning(ctx context.Context) error {
	vm.BootDuration = 0
	status, err := vm.Status(ctx)
	if err != nil {
		return err
	}
	// An instance made from an older image (its recipe changed: hack/e2e/build-image.sh) is
	// made again, so that a kept instance has what the tests expect (curl, python3...).
	image := vm.imageRecipe()
	stamp := filepath.Join(vm.baseDir, vm.Name+".image")
	if old, _ := os.ReadFile(stamp); status != "" && image != "" && string(old) != image {
		fmt.Fprintf(os.Stderr, "limavm: instance %q was made from another image; deleting and recreating it\n", vm.Name)
		if out, err := vm.output(ctx, "limactl", "delete", "--force", vm.Name); err != nil {
			return fmt.Errorf("limavm: deleting instance %q: %w\n%s", vm.Name, err, out)
		}
		status = ""
	}
	if status == "" {
		if err := vm.start(ctx, true); err != nil {
			return err
		}
		return os.WriteFile(stamp, []byte(image), 0o644)
	}
	switch status {
	case "Running":
		// It may be a leftover whose guest is gone (host suspend, killed QEMU...): check it answers.
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, _, perr := vm.Shell(pctx, "true")
		cancel()
		if perr == nil {
			fmt.Fprintf(os.Stderr, "limavm: reusing running instance %q (LIMA_HOME=%s)\n", vm.Name, vm.LimaHome)
			return nil
		}
		fmt.Fprintf(os.Stderr, "limavm: instance %q is Running but does not answer (%v); restarting it\n", vm.Name, perr)
		if out, err := vm.output(ctx, "limactl", "stop", "--force", vm.Name); err != nil {
			return fmt.Errorf("limavm: force-stopping unresponsive instance %q: %w\n%s", vm.Name, err, out)
		}
		return vm.start(ctx, false)
	case "Stopped":
		return vm.start(ctx, false)
	default:
		// Broken (a half-created instance, a stale pid file, ...): start afresh.
		fmt.Fprintf(os.Stderr, "limavm: instance %q is %s; deleting and recreating it\n", vm.Name, status)
		if out, err := vm.output(ctx, "limactl", "delete", "--force", vm.Name); err != nil {
			return fmt.Errorf("limavm: deleting %s instance %q: %w\n%s", status, vm.Name, err, out)
		}
		if err := vm.start(ctx, true); err != nil {
			return err
		}
		return os.WriteFile(stamp, []byte(image), 0o644)
	}
}

// imageRecipe is the hash build-image.sh keeps beside the image ("" for an image made before).
func (vm *VM) imageRecipe() string {
	b, _ := os.ReadFile(filepath.Join(vm.KitDir, "image-"+imageFlavor, "recipe"))
	return strings.TrimSpace(string(b))
}

// start runs `limactl start`, creating the instance from the kit's template when create is set.
func (vm *VM) start(ctx context.Context, create bool) error {
	args := []string{"start", "--tty=false", "--timeout=" + BootTimeout.String()}
	if create {
		tmpl, err := vm.renderTemplate()
		if err != nil {
			return err
		}
		args = append(args, "--name="+vm.Name, "--mount-none", tmpl)
	} else {
		args = append(args, vm.Name)
	}
	// limactl's own --timeout is what normally fires; this one is the backstop.
	sctx, cancel := context.WithTimeout(ctx, BootTimeout+time.Minute)
	defer cancel()
	t0 := time.Now()
	out, err := vm.output(sctx, "limactl", args...)
	elapsed := time.Since(t0).Round(100 * time.Millisecond)
	if err != nil {
		if sctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, context.Cause(sctx))
		}
		diag := vm.diagnostics()
		if !Keep() {
			// Do not leave QEMU spinning after a failed boot; the next Boot starts it again.
			stopCtx, stopCancel := context.WithTimeout(context.Background(), time.Minute)
			_, _ = vm.output(stopCtx, "limactl", "stop", "--force", vm.Name)
			stopCancel()
		}
		return fmt.Errorf("limavm: `limactl %s` failed after %s: %w\n--- limactl output (tail) ---\n%s%s",
			strings.Join(args, " "), elapsed, err, tail(out, 40), diag)
	}
	vm.BootDuration = elapsed
	verb := "started"
	if create {
		verb = "created and started"
	}
	fmt.Fprintf(os.Stderr, "limavm: %s instance %q in %s (LIMA_HOME=%s)\n", verb, vm.Name, elapsed, vm.LimaHome)
	return nil
}

// diagnostics returns the tails of the instance's host agent and serial logs.
func (vm *VM) diagnostics() string {
	var b strings.Builder
	for _, f := range []struct {
		name  string
		lines int
	}{
		{"ha.stderr.log", 40},
		{"serial.log", 30},
		{"serialp.log", 30},
		{"serialv.log", 30},
	} {
		data, err := os.ReadFile(filepath.Join(vm.instDir(), f.name))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n--- %s (tail) ---\n%s", filepath.Join(vm.instDir(), f.name), tail(string(data), f.lines))
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "\n(no logs in %s)", vm.instDir())
	}
	return b.String()
}

// Command returns an *exec.Cmd that runs name+args as vm.User (via runuser when we are root)
// with exactly vm.Env. A name without a slash is looked up in Env's PATH (BinDir first). When
// ctx is done the process gets SIGTERM (runuser passes it on), then SIGKILL 10 s later.
// Variables the caller appends to cmd.Env are passed on as well.
func (vm *VM) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	path, lookErr := lookPathIn(name, envValue(vm.Env, "PATH"))
	var cmd *exec.Cmd
	if vm.runuser != "" {
		// -m: keep cmd.Env as is (runuser would otherwise reset HOME, SHELL, USER and LOGNAME).
		cmd = exec.CommandContext(ctx, vm.runuser, append([]string{"-m", "-u", vm.User, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	if lookErr != nil && cmd.Err == nil {
		cmd.Err = lookErr
	}
	cmd.Env = append([]string(nil), vm.Env...)
	cmd.Dir = "/"
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	// Also bounds the wait for output pipes that a daemonised child might keep open.
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// output runs a command as the user and returns its combined output.
func (vm *VM) output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := vm.Command(ctx, name, args...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // it exited 0; a background child kept the pipe open
	}
	return buf.String(), err
}

// Limactl runs limactl with args as the user and returns combined output. On failure the error
// includes the tail of that output.
func (vm *VM) Limactl(ctx context.Context, args ...string) (string, error) {
	out, err := vm.output(ctx, "limactl", args...)
	if err != nil {
		return out, fmt.Errorf("limactl %s: %w\n%s", strings.Join(args, " "), err, tail(out, 30))
	}
	return out, nil
}

// Shell runs a bash script inside the guest (limactl shell --workdir / NAME bash -c SCRIPT) and
// returns stdout, stderr. On failure the error includes the tail of stderr.
func (vm *VM) Shell(ctx context.Context, script string) (stdout, stderr string, err error) {
	cmd := vm.Command(ctx, "limactl", "shell", "--workdir", "/", vm.Name, "bash", "-c", script)
	var so, se bytes.Buffer
	cmd.Stdout = &so
	cmd.Stderr = &se
	err = cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("limactl shell %s: %w\n%s", vm.Name, err, tail(se.String(), 20))
	}
	return so.String(), se.String(), err
}

// Stop stops the instance (forcibly if a normal stop fails). The lock on the name is kept:
// Boot starts it again.
func (vm *VM) Stop(ctx context.Context) error {
	if !vm.exists() {
		return nil
	}
	out, err := vm.output(ctx, "limactl", "stop", vm.Name)
	if err == nil {
		return nil
	}
	out2, err2 := vm.output(ctx, "limactl", "stop", "--force", vm.Name)
	if err2 != nil {
		return fmt.Errorf("limavm: stopping %q: %w\n%s\n--- stop --force ---\n%s", vm.Name, err, tail(out, 20), tail(out2, 20))
	}
	return nil
}

// Delete deletes the instance (stopping it first if needed) and releases the name's lock. It is
// what a test binary's TestMain calls at the end unless LIMACTL_MCP_E2E_KEEP=1 (see Keep).
func (vm *VM) Delete(ctx context.Context) error {
	bootMu.Lock()
	defer bootMu.Unlock()
	if vm.exists() {
		if out, err := vm.output(ctx, "limactl", "delete", "--force", vm.Name); err != nil {
			return fmt.Errorf("limavm: deleting %q: %w\n%s", vm.Name, err, tail(out, 20))
		}
	}
	_ = os.Remove(vm.templatePath())
	delete(booted, filepath.Join(vm.LimaHome, vm.Name))
	if vm.lock != nil {
		_ = vm.lock.Close() // releases the flock
		vm.lock = nil
	}
	return nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines omitted]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n") + "\n"
}
