package background

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// The supervisor of one background process: the runner binary run as
// `limactl-mcp-runner bg-supervise DIR`, in a session of its own, by the runner that starts
// the process (start.go), with the environment, directory and identity that runner gives
// every command (procenv.Command). It starts the command in a process group of its own, writes its
// output into DIR in bounded segments and, when it exits, how it ended. It holds DIR/lock for
// as long as it lives. It is nobody's child that a connection could take down: the runner
// that started it, and the SSH session that runner lives in, may go at any time.
//
// Its standard input carries the spec (bgSpec, JSON); file descriptor 3 is where it reports
// the start (bgReport, JSON) before closing it. Its standard output and error are /dev/null.

// bgSpec is what a supervisor is told to run.
type bgSpec struct {
	// Path and Args are the program to run (procenv.Command's).
	Path string   `json:"path"`
	Args []string `json:"args"`
	// Argv and Dir are the command as the agent asked for it (info.json).
	Argv   []string             `json:"argv"`
	Dir    string               `json:"dir"`
	Output runnerproto.BgOutput `json:"output"`
}

// bgReport is the supervisor's answer to its runner.
type bgReport struct {
	PID        int    `json:"pid,omitempty"`
	StartError string `json:"start_error,omitempty"`
	NotFound   bool   `json:"not_found,omitempty"`
}

// SupervisorArg is the runner's first argument that makes it a supervisor.
const SupervisorArg = "bg-supervise"

// Supervise is the supervisor's whole life (see above); it returns when the command has
// exited and its output is closed.
func Supervise(dir string) error {
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	// The command must not inherit the report's descriptor: its runner reads it to the end.
	if err := unix.SetNonblock(3, false); err != nil {
		return fmt.Errorf("no report descriptor: %w", err)
	}
	unix.CloseOnExec(3)
	report := os.NewFile(3, "report")
	fail := func(err error) error {
		_ = json.NewEncoder(report).Encode(bgReport{StartError: err.Error()})
		report.Close()
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fail(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(fmt.Errorf("locking %s: %w", lock.Name(), err))
	}
	var spec bgSpec
	if err := json.NewDecoder(io.LimitReader(os.Stdin, 4<<20)).Decode(&spec); err != nil {
		return fail(fmt.Errorf("reading the spec: %w", err))
	}
	if err := checkBgOutput(spec.Output); err != nil {
		return fail(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	cmd := &exec.Cmd{
		Path:        spec.Path,
		Args:        spec.Args,
		Env:         os.Environ(),
		Stdout:      w,
		Stderr:      w,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	w.Close() // only the command holds the write end now
	if err != nil {
		r.Close()
		_ = json.NewEncoder(report).Encode(bgReport{StartError: err.Error(), NotFound: errors.Is(err, fs.ErrNotExist)})
		report.Close()
		return err
	}
	started := nowMillis()
	if err := writeJSONFile(filepath.Join(dir, "info.json"), bgInfo{Argv: spec.Argv, Dir: spec.Dir, PID: cmd.Process.Pid, Started: started}); err != nil {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		_ = cmd.Wait()
		return fail(err)
	}
	_ = json.NewEncoder(report).Encode(bgReport{PID: cmd.Process.Pid})
	report.Close()
	os.Stdin.Close()

	// The end is recorded once the output the command wrote before it exited is on disk: its
	// exit stops the reading for a moment (a read deadline), what the pipe holds is taken, and
	// then exit.json is written; the reading goes on while other processes hold the pipe.
	exitc := make(chan bgExit, 1)
	go func() {
		_ = cmd.Wait()
		ex := bgExit{Ended: nowMillis()}
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			ex.ExitCode, ex.Signal = -1, unix.SignalName(ws.Signal())
		} else {
			ex.ExitCode = ws.ExitStatus()
		}
		exitc <- ex
		_ = r.SetReadDeadline(time.Now())
	}()
	recorded := false
	record := func(ex bgExit) {
		_ = writeJSONFile(filepath.Join(dir, "exit.json"), ex)
		recorded = true
	}
	out := &segmentWriter{dir: dir, o: spec.Output}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = out.Write(buf[:n])
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if !recorded {
				record(<-exitc)
			}
			_ = r.SetReadDeadline(time.Time{})
			continue
		}
		if err != nil {
			break // EOF: every process that held the output has let go of it
		}
	}
	r.Close()
	out.Close()
	if !recorded {
		record(<-exitc) // a command may close its output and go on
	}
	return nil
}
