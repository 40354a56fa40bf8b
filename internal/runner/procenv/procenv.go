// Package procenv is the runner process's environment and how the commands it runs are made
// from it: the process environment (which the login environment, internal/runner's
// loginenv.go, rewrites while commands start, so every read and every rewrite goes through
// here, under one lock), a command from the words the agent gave (leading NAME=value words, a
// name not on PATH run through the user's shell, a process group of its own), and the
// runner's own binary (for the background supervisors it starts).
//
// It does not run or wait for anything: the foreground (internal/runner) and the background
// (internal/runner/background) start and collect their commands themselves.
package procenv

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// mu guards the process environment: commands are built and started under a read lock (Hold);
// a rewrite takes the write lock, so a command never sees half of one.
var mu sync.RWMutex

// Hold runs f while the environment cannot change: a command is made (Command) and started
// inside it.
func Hold(f func()) {
	mu.RLock()
	defer mu.RUnlock()
	f()
}

// LookPath is exec.LookPath on the current PATH.
func LookPath(name string) (string, error) {
	mu.RLock()
	defer mu.RUnlock()
	return exec.LookPath(name)
}

// Set sets one variable.
func Set(key, value string) error {
	mu.Lock()
	defer mu.Unlock()
	return os.Setenv(key, value)
}

// Replace makes the environment base, less unset, plus set, at once.
func Replace(base map[string]string, unset []string, set map[string]string) {
	mu.Lock()
	defer mu.Unlock()
	os.Clearenv()
	for k, v := range base {
		_ = os.Setenv(k, v)
	}
	for _, k := range unset {
		_ = os.Unsetenv(k)
	}
	for k, v := range set {
		_ = os.Setenv(k, v)
	}
}

var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// splitEnv separates leading NAME=value words from the command, as a shell would.
func splitEnv(argv []string) (env, cmd []string) {
	i := 0
	for i < len(argv) && envAssignment.MatchString(argv[i]) {
		i++
	}
	return argv[:i], argv[i:]
}

// CheckDir reports the way `cd DIR` would fail, or "".
func CheckDir(dir string) string {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return NoSuchDir
	case errors.Is(err, fs.ErrPermission):
		return "Permission denied"
	case err != nil:
		return err.Error()
	case !fi.IsDir():
		return "Not a directory"
	}
	if unix.Access(dir, unix.X_OK) != nil {
		return "Permission denied"
	}
	return ""
}

// NoSuchDir is CheckDir's answer for a directory that does not exist.
const NoSuchDir = "No such file or directory"

// resolve finds the program to run. A name that is not on PATH (a shell builtin such as `cd`
// or `export`, or a mistyped command) runs through the user's shell, which explains itself
// with its own message, exactly as it would in `limactl shell`.
func resolve(argv []string, dir string) (path string, args []string) {
	name := argv[0]
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			return filepath.Join(dir, name), argv
		}
		return name, argv
	}
	if p, err := exec.LookPath(name); err == nil && filepath.IsAbs(p) {
		return p, argv
	}
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	return shell, []string{shell, "-c", shellquote.Join(argv)}
}

// Command is how every command the runner runs is made, in the foreground or the background:
// argv's leading NAME=value words set variables, a name not on PATH runs through the user's
// shell, and the command gets the runner's environment (the login environment), PWD, the
// directory, and a process group of its own. It is nil when argv holds only assignments. It is
// called, and the command started, inside Hold.
func Command(argv []string, dir string) *exec.Cmd {
	env, argv := splitEnv(argv)
	if len(argv) == 0 {
		return nil
	}
	path, args := resolve(argv, dir)
	return &exec.Cmd{
		Path:        path,
		Args:        args,
		Dir:         dir,
		Env:         append(append(os.Environ(), "PWD="+dir), env...),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
}

// SelfExe is the runner's own binary, for the supervisors it starts.
func SelfExe() string {
	if p, err := os.Executable(); err == nil && !isDeleted(p) {
		return p
	}
	return "/proc/self/exe"
}

func isDeleted(p string) bool {
	var st syscall.Stat_t
	return syscall.Stat(p, &st) != nil
}
