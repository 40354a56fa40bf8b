package background

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runner/procenv"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// supervisorStartTimeout bounds a supervisor's report of its start.
const supervisorStartTimeout = 30 * time.Second

// Start starts a background process under a supervisor of its own (supervise.go).
// self is the runner binary that runs the supervisor.
func Start(req *runnerproto.BgStartRequest, self string) (*runnerproto.BgStartResult, error) {
	if err := checkBgOutput(req.Output); err != nil {
		return nil, err
	}
	if req.MaxRunning < 1 || req.MaxKept < req.MaxRunning {
		return nil, fmt.Errorf("background limits %d running, %d kept out of range", req.MaxRunning, req.MaxKept)
	}
	groupDir, err := bgGroupDir(req.Group, false)
	if err != nil {
		return nil, err
	}
	res := &runnerproto.BgStartResult{}
	if why := procenv.CheckDir(req.Dir); why != "" {
		res.DirMissing = why == procenv.NoSuchDir
		res.ExitCode = 1
		res.StartError = "cd: " + req.Dir + ": " + why
		return res, nil
	}
	if err := os.MkdirAll(groupDir, 0o700); err != nil {
		return nil, fmt.Errorf("making %s: %w", groupDir, err)
	}
	ids, _, err := bgRecordIDs(groupDir)
	if err != nil {
		return nil, err
	}
	if tooMany := makeRoom(groupDir, ids, req); tooMany {
		res.TooMany = true
		return res, nil
	}
	id, dir, err := newRecordDir(groupDir, ids)
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	var rep *bgReport
	procenv.Hold(func() { // the login environment is not being replaced while the command starts
		if cmd = procenv.Command(req.Argv, req.Dir); cmd != nil {
			rep, err = superviseCommand(cmd, self, dir, bgSpec{Path: cmd.Path, Args: cmd.Args, Argv: req.Argv, Dir: req.Dir, Output: req.Output})
		}
	})
	if cmd == nil {
		_ = os.RemoveAll(dir)
		res.StartError = "the command holds only NAME=value assignments: nothing to run in the background"
		res.ExitCode = 2
		return res, nil
	}
	if err == nil && rep.PID == 0 {
		res.StartError, res.ExitCode = rep.StartError, 126
		if rep.NotFound {
			res.ExitCode = 127
		}
		if res.StartError == "" {
			res.StartError = "the supervisor reported no process"
		}
	}
	if err != nil || rep.PID == 0 {
		_ = os.RemoveAll(dir)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	res.ID, res.PID = id, rep.PID
	return res, nil
}

// makeRoom removes the oldest records that ended while the group keeps MaxKept or more, and
// says whether MaxRunning processes are still running (their supervisors alive).
func makeRoom(groupDir string, ids []int, req *runnerproto.BgStartRequest) (tooMany bool) {
	var ended []int
	running := 0
	for _, id := range ids {
		if supervisorAlive(filepath.Join(groupDir, strconv.Itoa(id))) {
			running++
		} else {
			ended = append(ended, id)
		}
	}
	if running >= req.MaxRunning {
		return true
	}
	for kept := len(ids); kept >= req.MaxKept && len(ended) > 0; kept-- {
		_ = os.RemoveAll(filepath.Join(groupDir, strconv.Itoa(ended[0])))
		ended = ended[1:]
	}
	return false
}

// newRecordDir makes the directory of the next id: one more than the largest there is, made
// with mkdir so that two runners never take the same one.
func newRecordDir(groupDir string, ids []int) (int, string, error) {
	next := 1
	if len(ids) > 0 {
		next = ids[len(ids)-1] + 1
	}
	for range 100 {
		dir := filepath.Join(groupDir, strconv.Itoa(next))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return next, dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return 0, "", err
		}
		next++
	}
	return 0, "", fmt.Errorf("no free background process id in %s", groupDir)
}

// superviseCommand starts the supervisor of cmd (made by procenv.Command, so with the environment,
// directory and identity of every command) in a session of its own and waits for its report.
func superviseCommand(cmd *exec.Cmd, self, dir string, spec bgSpec) (*bgReport, error) {
	attr := *cmd.SysProcAttr // whatever identity the runner gives its commands, the supervisor has too
	attr.Setpgid, attr.Setsid = false, true
	if c := attr.Credential; c != nil {
		_ = os.Chown(dir, int(c.Uid), int(c.Gid))
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, err
	}
	sup := &exec.Cmd{
		Path:        self,
		Args:        []string{"limactl-mcp-runner", SupervisorArg, dir},
		Env:         cmd.Env,
		Dir:         cmd.Dir,
		Stdin:       specR,
		ExtraFiles:  []*os.File{repW},
		SysProcAttr: &attr,
	}
	err = sup.Start()
	specR.Close()
	repW.Close()
	if err != nil {
		specW.Close()
		repR.Close()
		return nil, fmt.Errorf("starting the background supervisor: %w", err)
	}
	go func() { _ = sup.Wait() }() // reaped while this runner lives; init's after
	_ = json.NewEncoder(specW).Encode(spec)
	specW.Close()
	defer repR.Close()
	_ = repR.SetReadDeadline(time.Now().Add(supervisorStartTimeout))
	b, err := io.ReadAll(io.LimitReader(repR, 64<<10))
	if err != nil {
		_ = sup.Process.Kill()
		return nil, fmt.Errorf("the background supervisor did not report its start: %w", err)
	}
	var rep bgReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("the background supervisor's report %.200q: %w", b, err)
	}
	return &rep, nil
}
