package runner

import (
	"errors"
	"io/fs"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/runner/procenv"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

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
	if why := procenv.CheckDir(req.Dir); why != "" {
		res.DirMissing = why == procenv.NoSuchDir
		res.ExitCode = 1
		res.StartError = "cd: " + req.Dir + ": " + why
		_, _ = stderr.Write([]byte(res.StartError + "\n"))
		return finish()
	}
	var cmd *exec.Cmd
	var outs []*output
	var err error
	procenv.Hold(func() { // the login environment is not being replaced while the command starts
		if cmd = procenv.Command(req.Argv, req.Dir); cmd != nil {
			outs, err = startCommand(cmd, stdout, stderr)
		}
	})
	if cmd == nil {
		return finish()
	}
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
