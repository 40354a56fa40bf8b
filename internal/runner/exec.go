package runner

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
	"time"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// splitEnv separates leading NAME=value words from the command, as a shell would.
func splitEnv(argv []string) (env, cmd []string) {
	i := 0
	for i < len(argv) && envAssignment.MatchString(argv[i]) {
		i++
	}
	return argv[:i], argv[i:]
}

// checkDir reports the way `cd DIR` would fail, or "".
func checkDir(dir string) string {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory"
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

// commandFor is how every command the runner runs is made, in the foreground (runExec) or the
// background (bgstart.go): argv's leading NAME=value words set variables, a name not on PATH
// runs through the user's shell, and the command gets the runner's environment (the login
// environment, loginenv.go), PWD, the directory, and a process group of its own. It is nil
// when argv holds only assignments. The caller holds envMu's read lock until the command has
// started.
func commandFor(argv []string, dir string) *exec.Cmd {
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

// runExec runs one command in its own process group. kill is closed to kill it early.
func runExec(req *runnerproto.ExecRequest, started func(pid int), kill <-chan struct{}) *runnerproto.ExecResult {
	start := time.Now()
	res := &runnerproto.ExecResult{}
	stdout := headtail.New(req.HeadBytes, req.TailBytes)
	stderr := headtail.New(req.HeadBytes, req.TailBytes)
	finish := func() *runnerproto.ExecResult {
		res.Stdout, res.Stderr = stdout.Output(), stderr.Output()
		res.DurationMillis = time.Since(start).Milliseconds()
		return res
	}
	if why := checkDir(req.Dir); why != "" {
		res.DirMissing = why == "No such file or directory"
		res.ExitCode = 1
		res.StartError = "cd: " + req.Dir + ": " + why
		_, _ = stderr.Write([]byte(res.StartError + "\n"))
		return finish()
	}
	envMu.RLock() // the login environment is not being replaced while the command starts
	cmd := commandFor(req.Argv, req.Dir)
	if cmd == nil {
		envMu.RUnlock()
		return finish()
	}
	outs, err := startCommand(cmd, stdout, stderr)
	envMu.RUnlock()
	if err != nil {
		res.ExitCode = 126
		if errors.Is(err, fs.ErrNotExist) {
			res.ExitCode = 127
		}
		res.StartError = err.Error()
		_, _ = stderr.Write([]byte(err.Error() + "\n"))
		return finish()
	}
	pid := cmd.Process.Pid
	started(pid)
	done := make(chan struct{})   // the command and its output are collected
	giveUp := make(chan struct{}) // closed on timeout or cancel
	var watcher sync.WaitGroup
	watcher.Add(1)
	go func() {
		defer watcher.Done()
		defer close(giveUp)
		var timeout <-chan time.Time
		if req.TimeoutMillis > 0 {
			t := time.NewTimer(time.Duration(req.TimeoutMillis) * time.Millisecond)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-done:
			return
		case <-timeout:
			res.TimedOut = true
		case <-kill:
			res.Canceled = true
		}
		_ = unix.Kill(-pid, unix.SIGKILL)
	}()
	_ = cmd.Wait()
	res.HeldBy = collect(outs, giveUp)
	close(done)
	watcher.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		res.ExitCode = -1
		res.Signal = unix.SignalName(ws.Signal())
	default:
		res.ExitCode = ws.ExitStatus()
	}
	if res.TimedOut || res.Canceled {
		// The command's children may outlive it; the group is killed either way.
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
	return finish()
}
