package background

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Reading, listing and signalling background processes, and ending a group's: by id, from
// their directories (store.go), so any runner of the guest user can, not only the one that
// started them.

// maxBgRead bounds one read of a process's output.
const maxBgRead = 4 << 20

// bgRecordDir is the directory of process id of group, or "" when there is none.
func bgRecordDir(group string, id int) (string, error) {
	groupDir, err := bgGroupDir(group, false)
	if err != nil {
		return "", err
	}
	if id < 1 {
		return "", nil
	}
	dir := filepath.Join(groupDir, strconv.Itoa(id))
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return "", nil
	}
	return dir, nil
}

func Read(req *runnerproto.BgReadRequest) (*runnerproto.BgReadResult, error) {
	if err := checkBgOutput(req.Output); err != nil {
		return nil, err
	}
	if req.Max < 1 || req.Max > maxBgRead || req.Offset < 0 {
		return nil, fmt.Errorf("read of %d bytes at %d out of range", req.Max, req.Offset)
	}
	dir, err := bgRecordDir(req.Group, req.ID)
	if err != nil {
		return nil, err
	}
	res := &runnerproto.BgReadResult{Data: []byte{}}
	if dir == "" {
		res.Unknown = true
		return res, nil
	}
	// The status first: output read after it is at least what the status counts, so a
	// reader that sees "ended" and reads to that size has everything.
	if res.Status, err = bgStatusOf(dir, req.ID, req.Output); err != nil {
		return nil, err
	}
	res.Data, res.Offset, res.Skipped, err = readOutput(dir, req.Output, req.Offset, req.Max)
	if err != nil {
		return nil, err
	}
	res.Next = res.Offset + int64(len(res.Data))
	res.Status.OutputBytes = max(res.Status.OutputBytes, res.Next)
	withPorts([]*runnerproto.BgStatus{&res.Status})
	return res, nil
}

func List(req *runnerproto.BgListRequest) (*runnerproto.BgListResult, error) {
	if err := checkBgOutput(req.Output); err != nil {
		return nil, err
	}
	groupDir, err := bgGroupDir(req.Group, false)
	if err != nil {
		return nil, err
	}
	res := &runnerproto.BgListResult{Processes: []runnerproto.BgStatus{}}
	ids, truncated, err := bgRecordIDs(groupDir)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	res.Truncated = truncated
	for _, id := range ids {
		if len(res.Processes) >= req.Max {
			res.Truncated = true
			break
		}
		st, err := bgStatusOf(filepath.Join(groupDir, strconv.Itoa(id)), id, req.Output)
		if err != nil {
			continue // starting (no info.json yet), or garbage the agent made
		}
		res.Processes = append(res.Processes, st)
	}
	sts := make([]*runnerproto.BgStatus, len(res.Processes))
	for i := range res.Processes {
		sts[i] = &res.Processes[i]
	}
	withPorts(sts)
	return res, nil
}

func Signal(req *runnerproto.BgSignalRequest) (*runnerproto.BgSignalResult, error) {
	if err := checkBgOutput(req.Output); err != nil {
		return nil, err
	}
	sig := unix.SignalNum("SIG" + strings.TrimPrefix(strings.ToUpper(req.Signal), "SIG"))
	if sig == 0 {
		return nil, fmt.Errorf("unknown signal %q", req.Signal)
	}
	if req.GraceMillis < 0 || req.GraceMillis > int64(time.Minute/time.Millisecond) {
		return nil, fmt.Errorf("grace of %d ms out of range", req.GraceMillis)
	}
	dir, err := bgRecordDir(req.Group, req.ID)
	if err != nil {
		return nil, err
	}
	res := &runnerproto.BgSignalResult{}
	if dir == "" {
		res.Unknown = true
		return res, nil
	}
	st, err := bgStatusOf(dir, req.ID, req.Output)
	if err != nil {
		return nil, err
	}
	// The group, not only the command: what it started runs on after it (a server behind
	// `sh -c`). Once the command has ended and its group is empty, there is nothing to signal
	// (and the pid may belong to someone else one day).
	if (!st.Running && !GroupAlive(st.PID)) || st.Lost {
		res.AlreadyEnded, res.Status = true, st
		return res, nil
	}
	if err := unix.Kill(-st.PID, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return nil, fmt.Errorf("signalling process group %d: %w", st.PID, err)
	}
	stopping := sig == unix.SIGTERM || sig == unix.SIGKILL || sig == unix.SIGINT || sig == unix.SIGHUP || sig == unix.SIGQUIT
	if stopping {
		if !waitGroupGone(st.PID, time.Duration(req.GraceMillis)*time.Millisecond) && sig != unix.SIGKILL {
			_ = unix.Kill(-st.PID, unix.SIGKILL)
			res.Killed = true
			waitGroupGone(st.PID, 5*time.Second)
		}
		waitEnded(dir, 5*time.Second) // the supervisor records the end
	}
	if res.Status, err = bgStatusOf(dir, req.ID, req.Output); err != nil {
		return nil, err
	}
	withPorts([]*runnerproto.BgStatus{&res.Status})
	return res, nil
}

// waitGroupGone waits up to d for process group pid to have no member left.
func waitGroupGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !GroupAlive(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitEnded waits up to d for the supervisor in dir to record the end.
func waitEnded(dir string, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(filepath.Join(dir, "exit.json")); err == nil || !supervisorAlive(dir) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// maxBgOwners bounds the owners a session's end looks at.
const maxBgOwners = 256

func End(req *runnerproto.BgEndRequest) (*runnerproto.BgEndResult, error) {
	dir, err := bgGroupDir(req.Group, true)
	if err != nil {
		return nil, err
	}
	res := &runnerproto.BgEndResult{}
	var owners []string
	if strings.Contains(req.Group, "/") {
		owners = []string{dir}
	} else {
		f, err := os.Open(dir)
		if errors.Is(err, os.ErrNotExist) {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		ents, _ := f.ReadDir(maxBgOwners)
		f.Close()
		for _, e := range ents {
			if !bgName.MatchString(e.Name()) {
				continue
			}
			res.Owners = append(res.Owners, e.Name())
			if !req.ListOnly && !slices.Contains(req.KeepOwners, e.Name()) {
				owners = append(owners, filepath.Join(dir, e.Name()))
			}
		}
	}
	if req.ListOnly {
		return res, nil
	}
	for _, od := range owners {
		ids, _, err := bgRecordIDs(od)
		if err != nil {
			continue
		}
		var pids []int
		var supervised []string
		for _, id := range ids {
			rd := filepath.Join(od, strconv.Itoa(id))
			var info bgInfo
			if readJSONFile(filepath.Join(rd, "info.json"), &info) != nil || !validPID(info.PID) {
				continue
			}
			_, exitErr := os.Lstat(filepath.Join(rd, "exit.json"))
			if supervisorAlive(rd) || (exitErr != nil && GroupAlive(info.PID)) {
				_ = unix.Kill(-info.PID, unix.SIGKILL)
				pids = append(pids, info.PID)
				supervised = append(supervised, rd)
				res.Killed++
			}
		}
		for _, pid := range pids {
			waitGroupGone(pid, time.Second)
		}
		// A supervisor records the end (exit.json) as its process goes: removing the directory
		// while it writes there fails ("directory not empty"); wait for it, then try a few times.
		for _, rd := range supervised {
			waitEnded(rd, 2*time.Second)
		}
		for try := 0; try < 5; try++ {
			if os.RemoveAll(od) == nil {
				res.Removed += len(ids)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return res, nil
}
