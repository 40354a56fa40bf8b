package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A command's output is read to its end whenever the command is done, however busy the guest
// is: the runner gives the command pipes of its own and reads them until EOF. Only when a
// process the command left behind still holds a pipe open (a background job, `cmd &`) would
// EOF never come; that is detected, by finding the processes that hold the pipe, not guessed
// from a timer: what is in the pipe then is read, and the result names those processes.
// (exec.Cmd's WaitDelay, used before, cut output silently when draining took longer than its
// bound, as it did under load.)

// output is one stream of a command: the read end of its pipe and where its bytes go.
type output struct {
	r    *os.File
	ino  uint64 // the pipe's inode, to find who else holds it
	w    io.Writer
	done chan struct{} // closed when the reader stops
	once sync.Once
	eof  bool
}

// startCommand starts cmd with a pipe for each of stdout and stderr (copied to the writers
// given) and returns them; the caller waits for cmd and then calls collect.
func startCommand(cmd *exec.Cmd, stdout, stderr io.Writer) ([]*output, error) {
	var outs []*output
	var childEnds []*os.File
	closeAll := func() {
		for _, o := range outs {
			o.r.Close()
		}
		for _, f := range childEnds {
			f.Close()
		}
	}
	for _, w := range []io.Writer{stdout, stderr} {
		r, cw, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(cw.Fd()), &st); err != nil { // Fd on the child's end: it is handed over as blocking anyway
			r.Close()
			cw.Close()
			closeAll()
			return nil, err
		}
		outs = append(outs, &output{r: r, ino: st.Ino, w: w, done: make(chan struct{})})
		childEnds = append(childEnds, cw)
	}
	cmd.Stdout, cmd.Stderr = childEnds[0], childEnds[1]
	err := cmd.Start()
	for _, f := range childEnds {
		f.Close() // only the command holds the write ends now
	}
	if err != nil {
		for _, o := range outs {
			o.r.Close()
		}
		return nil, err
	}
	for _, o := range outs {
		go o.read()
	}
	return outs, nil
}

// read copies the pipe until EOF, or until stop, when it reads what is buffered and returns.
func (o *output) read() {
	defer close(o.done)
	defer o.r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := o.r.Read(buf)
		if n > 0 {
			if _, werr := o.w.Write(buf[:n]); werr != nil {
				return // the writer wants no more (a search's byte limit); closing the pipe tells the command
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			o.eof = true
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			o.drain(buf)
			return
		default:
			return
		}
	}
}

// drain reads what the pipe holds now, without waiting for more.
func (o *output) drain(buf []byte) {
	_ = o.r.SetReadDeadline(time.Time{})
	rc, err := o.r.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.Read(int(fd), buf)
			if n > 0 {
				if _, werr := o.w.Write(buf[:n]); werr != nil {
					return true
				}
				continue
			}
			if n == 0 && err == nil {
				o.eof = true
			}
			return true // EOF, EAGAIN (nothing more now) or an error
		}
	})
}

// halt makes the reader take what is buffered and stop.
func (o *output) halt() {
	o.once.Do(func() { _ = o.r.SetReadDeadline(time.Now()) })
}

// collect finishes reading a command's outputs once the command itself has exited: to EOF
// when nobody else holds the pipes, else what they hold now. It returns the processes that
// still held a pipe (described as "pid 123 (sleep 100)"), or nil. give, when it closes
// (the command's timeout or cancel), stops the wait for a holder that cannot be seen.
func collect(outs []*output, give <-chan struct{}) []string {
	allDone := func() bool {
		for _, o := range outs {
			select {
			case <-o.done:
			default:
				return false
			}
		}
		return true
	}
	// Most commands leave nothing behind: EOF follows their exit at once. Looking for holders
	// costs a walk of /proc, so it waits for that moment first (a wait, never a cutoff).
	select {
	case <-outs[0].done:
	case <-time.After(10 * time.Millisecond):
	}
	var held []string
	gaveUp := false
	for held == nil && !allDone() {
		var inodes []uint64
		for _, o := range outs {
			select {
			case <-o.done:
				continue
			default:
			}
			inodes = append(inodes, o.ino)
		}
		holders, unseen := pipeHolders(inodes)
		switch {
		case len(holders) > 0:
			held = holders
			continue
		case unseen && gaveUp:
			held = []string{"a process the runner may not inspect (another user's)"}
			continue
		}
		// No process we can see holds a pipe: EOF is on its way, or (unseen) a process we
		// may not inspect holds it, which only the command's timeout or cancel ends. Wait
		// for EOF, and look again now and then.
		wait := 20 * time.Millisecond
		if unseen {
			wait = 200 * time.Millisecond
		}
		select {
		case <-outs[0].done:
		case <-outs[1].done:
		case <-give:
			gaveUp, give = true, nil
		case <-time.After(wait):
		}
	}
	for _, o := range outs {
		o.halt()
	}
	ended := true
	for _, o := range outs {
		<-o.done
		ended = ended && o.eof
	}
	if ended {
		return nil // the holders were on their way out: nothing was left behind
	}
	return held
}

// pipeHolders lists the processes, other than the runner, that have one of the pipes open
// (the runner holds only the read ends, so every other holder is a writer). unseen says some
// processes' descriptors could not be read.
func pipeHolders(inodes []uint64) (holders []string, unseen bool) {
	if len(inodes) == 0 {
		return nil, false
	}
	want := map[string]bool{}
	for _, ino := range inodes {
		want["pipe:["+strconv.FormatUint(ino, 10)+"]"] = true
	}
	self := os.Getpid()
	selfExe, _ := os.Readlink("/proc/self/exe")
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, true
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			if errors.Is(err, os.ErrPermission) {
				unseen = true
			}
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && want[l] {
				// A child the runner is starting for another command holds copies of every
				// descriptor between its fork and its exec, which closes them: not a holder.
				// It is known by its executable (the runner's own), or, under qemu-user, where
				// /proc/self/exe is the emulated binary but a child's exe is the emulator, by its
				// parent: a direct child of the runner that has exec'd holds only its own
				// command's pipes (the others are close-on-exec), and the runner adopts no
				// orphans (it is no subreaper), so any other holder has another parent.
				if exe, _ := os.Readlink(filepath.Join("/proc", p.Name(), "exe")); exe != "" && exe == selfExe || parentPid(pid) == self {
					break // collect looks again: the child execs within milliseconds
				}
				if len(holders) < maxHolders {
					holders = append(holders, describeProcess(pid))
				}
				break
			}
		}
	}
	return holders, unseen
}

// parentPid is pid's parent as /proc/PID/stat gives it (0 when it cannot be read). The fields
// after the command name, which may hold anything, start after its last ')'.
func parentPid(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// maxHolders is how many holders a result names (the host accepts 16).
const maxHolders = 8

// describeProcess is "pid 123 (sleep 100)", the command line cut to 60 bytes. A process in the
// middle of an exec has no command line for a moment (a loaded machine makes the moment
// longer): it is read again a few times, then the kernel's short name stands in for it.
func describeProcess(pid int) string {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	cmdline := ""
	for try := 0; try < 5 && cmdline == ""; try++ {
		if try > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		cmdline = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	}
	if cmdline == "" {
		if b, err := os.ReadFile(filepath.Join(dir, "comm")); err == nil && len(bytes.TrimSpace(b)) > 0 {
			cmdline = "[" + string(bytes.TrimSpace(b)) + "]"
		}
	}
	if len(cmdline) > 60 {
		cmdline = cmdline[:60] + "…"
	}
	if cmdline == "" {
		return fmt.Sprintf("pid %d", pid)
	}
	return fmt.Sprintf("pid %d (%s)", pid, cmdline)
}
