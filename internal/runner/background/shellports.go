package background

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// The previews of a `limactl mcp shell` command: the sockets listened on by the processes that
// carry its mark in their environment (runnerproto.ShellMarkVar). Its processes are not one
// process group (a shell's jobs, sudo's pty, an agent's own tool calls each make their own),
// nor one session, nor, once a daemon double-forks, one tree; the environment they inherit is
// what they share. A process that clears or rewrites its environment is not seen, as with the
// tools' process groups. Only the runner's user's processes can be read: under a network
// policy the agent's, whose runner this is.

// maxEnviron bounds the bytes of one process's /proc/PID/environ looked at (the mark is set
// before the command starts, so it is early in its children's; a process that grew its
// environment past this is not seen).
const maxEnviron = 256 << 10

// ShellPorts lists the listening sockets of the processes marked q.Mark.
func ShellPorts(q *runnerproto.ShellPortsRequest) (*runnerproto.ShellPortsResult, error) {
	if !runnerproto.ValidShellMark(q.Mark) {
		return nil, fmt.Errorf("shell ports: a mark of %d characters that is not 16 to 64 hex digits", len(q.Mark))
	}
	return &runnerproto.ShellPortsResult{Ports: portsOf(markedProcesses(q.Mark))}, nil
}

// markedProcesses returns the pids of /proc whose environment holds ShellMarkVar=mark (at
// most maxGroupMembers; the runner itself never carries one).
func markedProcesses(mark string) []int {
	f, err := os.Open(procRoot)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(maxProcEntries)
	want := []byte(runnerproto.ShellMarkVar + "=" + mark + "\x00")
	var out []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid < 1 {
			continue
		}
		b, err := readCapped(procRoot+"/"+n+"/environ", maxEnviron)
		if err != nil || len(b) == 0 {
			continue // another user's (not ours to read), a kernel thread, or gone
		}
		if b[len(b)-1] != 0 && len(b) < maxEnviron {
			b = append(b, 0) // whole, without the last NUL: the last variable is whole too
		}
		if bytes.HasPrefix(b, want) || bytes.Contains(b, append([]byte{0}, want...)) {
			out = append(out, pid)
			if len(out) >= maxGroupMembers {
				break
			}
		}
	}
	return out
}
