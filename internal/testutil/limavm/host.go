package limavm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is everything Boot resolves from the host before touching an instance.
type config struct {
	kitDir   string
	repoRoot string
	baseDir  string
	limaHome string
	binDir   string

	user     string // "" = current user
	home     string
	uid, gid int // -1 when we are not root (nothing to chown)
	runuser  string
}

func resolveConfig() (*config, error) {
	c := &config{
		kitDir:  envOr("KIT_DIR", DefaultKitDir),
		baseDir: envOr("LIMACTL_MCP_E2E_DIR", DefaultBaseDir),
		uid:     -1,
		gid:     -1,
	}
	c.limaHome = filepath.Join(c.baseDir, "lima")
	c.binDir = filepath.Join(c.baseDir, "bin")

	root, err := findRepoRoot()
	if err != nil {
		return nil, err
	}
	c.repoRoot = root

	var missing []string
	if os.Geteuid() == 0 {
		c.user = envOr("LIMA_USER", DefaultUser)
		u, err := user.Lookup(c.user)
		if err != nil {
			missing = append(missing, fmt.Sprintf("the unprivileged user %q that runs limactl (%v)", c.user, err))
		} else {
			c.home = u.HomeDir
			c.uid, _ = strconv.Atoi(u.Uid)
			c.gid, _ = strconv.Atoi(u.Gid)
		}
		for _, p := range []string{"/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"} {
			if isExecutable(p) {
				c.runuser = p
				break
			}
		}
		if c.runuser == "" {
			missing = append(missing, "runuser (util-linux)")
		}
	} else {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("limavm: current user: %w", err)
		}
		c.home = u.HomeDir
		if h := os.Getenv("HOME"); h != "" {
			c.home = h
		}
	}

	mustExec := []string{
		filepath.Join(c.kitDir, "prefix/bin/limactl"),
		filepath.Join(c.repoRoot, "hack/e2e/sshwrap/ssh"),
		"/usr/bin/ssh", // the wrapper runs it by absolute path
	}
	mustExist := []string{
		filepath.Join(c.kitDir, "prefix/share/lima/lima-guestagent.Linux-x86_64"),
		filepath.Join(c.kitDir, "image-"+imageFlavor, "rootfs.qcow2"),
		filepath.Join(c.kitDir, "image-"+imageFlavor, "vmlinuz"),
		filepath.Join(c.kitDir, "image-"+imageFlavor, "initrd.img"),
		filepath.Join(c.repoRoot, "hack/e2e/template.yaml.in"),
	}
	for _, p := range mustExec {
		if !isExecutable(p) {
			missing = append(missing, p)
		}
	}
	for _, p := range mustExist {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			missing = append(missing, p)
		}
	}
	for _, prog := range []string{"qemu-system-x86_64", "qemu-img"} {
		if _, err := lookPathIn(prog, "/usr/local/bin:/usr/bin:/bin"); err != nil {
			missing = append(missing, prog)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf(`limavm: the Lima VM kit for end-to-end tests is not set up on this host.
Missing:
  - %s
Fix: run, once, as root from the repository root:
    sudo hack/e2e/setup.sh
(it installs QEMU, builds limactl + lima-guestagent v2.2.0 into KIT_DIR=%s, builds the Debian
guest image and creates the user %q; see hack/e2e/README.md). KIT_DIR and LIMA_USER override the
defaults; run only the unit tests by leaving out -tags e2e`,
			strings.Join(missing, "\n  - "), c.kitDir, envOr("LIMA_USER", DefaultUser))
	}
	return c, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// findRepoRoot walks up from the working directory (a test binary runs in its package
// directory) to the go.mod of the tree that holds hack/e2e; failing that, from this source file.
func findRepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for d := dir; ; d = filepath.Dir(d) {
			if fileExists(filepath.Join(d, "go.mod")) && fileExists(filepath.Join(d, "hack/e2e/template.yaml.in")) {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("limavm: cannot find the repository root (a directory with go.mod and hack/e2e/) above %v", starts)
}

func (c *config) prepareDirs() error {
	for _, d := range []string{c.baseDir, c.limaHome, c.binDir, filepath.Join(c.baseDir, "locks"), filepath.Join(c.baseDir, "templates")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("limavm: %w", err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return fmt.Errorf("limavm: %w", err)
		}
		if c.uid >= 0 {
			if err := os.Chown(d, c.uid, c.gid); err != nil {
				return fmt.Errorf("limavm: %w", err)
			}
		}
	}
	return nil
}

func (c *config) newVM(name string) *VM {
	vm := &VM{
		Name:     name,
		LimaHome: c.limaHome,
		User:     c.user,
		KitDir:   c.kitDir,
		RepoRoot: c.repoRoot,
		BinDir:   c.binDir,
		baseDir:  c.baseDir,
		runuser:  c.runuser,
	}
	userName := c.user
	if userName == "" {
		if u, err := user.Current(); err == nil {
			userName = u.Username
		}
	}
	vm.Env = []string{
		"LIMA_HOME=" + c.limaHome,
		"HOME=" + c.home,
		"USER=" + userName,
		"LOGNAME=" + userName,
		"PATH=" + strings.Join([]string{
			c.binDir,
			filepath.Join(c.repoRoot, "hack/e2e/sshwrap"),
			filepath.Join(c.kitDir, "prefix/bin"),
			"/usr/local/bin", "/usr/bin", "/bin",
		}, ":"),
		"QEMU_SYSTEM_X86_64=" + QEMUSystemX8664,
		"LANG=C.UTF-8",
	}
	return vm
}

// fixSSHWrapPath makes sure the user can run hack/e2e/sshwrap/ssh (the ConnectTimeout wrapper
// that keeps Lima's boot-time ssh polls from hanging for minutes). A clone under a directory the
// user cannot traverse (such as /root) would silently lose it, so copy it to a directory the
// user can reach and put that on PATH instead.
func (vm *VM) fixSSHWrapPath(ctx context.Context) error {
	if vm.runuser == "" {
		return nil
	}
	wrapDir := filepath.Join(vm.RepoRoot, "hack/e2e/sshwrap")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := vm.Command(cctx, "/usr/bin/test", "-x", filepath.Join(wrapDir, "ssh")).Run(); err == nil {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(wrapDir, "ssh"))
	if err != nil {
		return fmt.Errorf("limavm: %w", err)
	}
	copyDir := filepath.Join(vm.baseDir, "sshwrap")
	if err := os.MkdirAll(copyDir, 0o755); err != nil {
		return fmt.Errorf("limavm: %w", err)
	}
	if err := os.Chmod(copyDir, 0o755); err != nil {
		return fmt.Errorf("limavm: %w", err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, "ssh"), data, 0o755); err != nil {
		return fmt.Errorf("limavm: %w", err)
	}
	if err := os.Chmod(filepath.Join(copyDir, "ssh"), 0o755); err != nil {
		return fmt.Errorf("limavm: %w", err)
	}
	for i, kv := range vm.Env {
		if strings.HasPrefix(kv, "PATH=") {
			vm.Env[i] = strings.Replace(kv, ":"+wrapDir+":", ":"+copyDir+":", 1)
		}
	}
	fmt.Fprintf(os.Stderr, "limavm: user %s cannot reach %s; using a copy of the ssh wrapper in %s\n", vm.User, wrapDir, copyDir)
	return nil
}

func (vm *VM) templatePath() string {
	return filepath.Join(vm.baseDir, "templates", vm.Name+".yaml")
}

// renderTemplate writes hack/e2e/template.yaml.in with the kit's image directory filled in.
func (vm *VM) renderTemplate() (string, error) {
	in, err := os.ReadFile(filepath.Join(vm.RepoRoot, "hack/e2e/template.yaml.in"))
	if err != nil {
		return "", fmt.Errorf("limavm: %w", err)
	}
	out := strings.ReplaceAll(string(in), "@IMAGE_DIR@", filepath.Join(vm.KitDir, "image-"+imageFlavor))
	p := vm.templatePath()
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		return "", fmt.Errorf("limavm: %w", err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		return "", fmt.Errorf("limavm: %w", err)
	}
	return p, nil
}

// acquireLock takes an exclusive flock on path, waiting (until ctx is done) while another
// process holds it. The kernel drops the lock when the holder exits; Go opens files with
// O_CLOEXEC, so limactl's background host agent does not inherit it.
func acquireLock(ctx context.Context, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	announced := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			_ = f.Truncate(0)
			_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d (%s)\n", os.Getpid(), strings.Join(os.Args, " "))), 0)
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		if !announced {
			holder, _ := os.ReadFile(path)
			fmt.Fprintf(os.Stderr, "limavm: waiting for %s, held by %s", path, strings.TrimSpace(string(holder))+"\n")
			announced = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", path, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// lookPathIn finds an executable named name in the colon-separated list path. A name with a
// slash is returned as is.
func lookPathIn(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if isExecutable(p) {
			return p, nil
		}
	}
	return name, &exec.Error{Name: name, Err: fmt.Errorf("%w in PATH=%s", exec.ErrNotFound, path)}
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Template writes the kit's Lima template (with its image directory filled in) and returns its
// path, for tests that create instances of their own.
func (vm *VM) Template() (string, error) { return vm.renderTemplate() }
