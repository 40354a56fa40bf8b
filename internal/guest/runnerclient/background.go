package runnerclient

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Background processes run under supervisors of their own in the guest (see
// internal/runnerproto/background.go).

// Caps on what a background reply may carry (the runner's own caps, with room).
const (
	maxBgArgvWords = 1024
	maxBgArgvBytes = 256 << 10
	maxBgText      = 4096
	maxBgOwners    = 256
)

// BgStart starts a background process.
func (c *Client) BgStart(ctx context.Context, q runnerproto.BgStartRequest) (*runnerproto.BgStartResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{BgStart: &q}, checkBgStart)
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.BgStart, nil
}

// checkBgStart is BgStart's post-condition: started (an id and a pid) or not, never both.
func checkBgStart(resp *runnerproto.Response) error {
	r := resp.BgStart
	if r == nil {
		return badReply("no background start result")
	}
	if r.ID < 0 || r.PID < 0 || (r.ID > 0) != (r.PID > 1) || len(r.StartError) > maxBgText || r.ExitCode < 0 || r.ExitCode > 255 {
		return badReply("a background start of id %d, pid %d", r.ID, r.PID)
	}
	if notStarted := r.TooMany || r.DirMissing || r.StartError != ""; notStarted == (r.ID > 0) {
		return badReply("a background start that says both or neither of started (id %d) and not started", r.ID)
	}
	return nil
}

// BgRead reads a background process's output and status.
func (c *Client) BgRead(ctx context.Context, q runnerproto.BgReadRequest) (*runnerproto.BgReadResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{BgRead: &q}, func(resp *runnerproto.Response) error { return checkBgRead(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.BgRead, nil
}

// checkBgRead is BgRead's post-condition: no more than asked for, offsets that add up, the
// status of the process asked for.
func checkBgRead(q *runnerproto.BgReadRequest, resp *runnerproto.Response) error {
	r := resp.BgRead
	if r == nil {
		return badReply("no background output")
	}
	if r.Unknown && len(r.Data) > 0 {
		return badReply("output of a background process said not to exist")
	}
	if len(r.Data) > q.Max || r.Offset < 0 || r.Skipped < 0 || r.Next != r.Offset+int64(len(r.Data)) || (!r.Unknown && r.Next > r.Status.OutputBytes) {
		return badReply("background output of %d bytes at %d (next %d, skipped %d) for %d asked at %d", len(r.Data), r.Offset, r.Next, r.Skipped, q.Max, q.Offset)
	}
	if !r.Unknown {
		return checkBgStatus(&r.Status, q.ID)
	}
	return nil
}

// BgList lists a group's background processes.
func (c *Client) BgList(ctx context.Context, q runnerproto.BgListRequest) (*runnerproto.BgListResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{BgList: &q}, func(resp *runnerproto.Response) error { return checkBgList(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.BgList, nil
}

// checkBgList is BgList's post-condition: at most the processes asked for, each once.
func checkBgList(q *runnerproto.BgListRequest, resp *runnerproto.Response) error {
	r := resp.BgList
	if r == nil {
		return badReply("no background list")
	}
	if len(r.Processes) > q.Max {
		return badReply("%d background processes, more than the %d asked for", len(r.Processes), q.Max)
	}
	seen := make(map[int]bool, len(r.Processes))
	for i := range r.Processes {
		if err := checkBgStatus(&r.Processes[i], 0); err != nil {
			return err
		}
		if seen[r.Processes[i].ID] {
			return badReply("background process %d listed twice", r.Processes[i].ID)
		}
		seen[r.Processes[i].ID] = true
	}
	return nil
}

// BgSignal signals a background process's group (then SIGKILL after the grace period).
func (c *Client) BgSignal(ctx context.Context, q runnerproto.BgSignalRequest) (*runnerproto.BgSignalResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{BgSignal: &q}, func(resp *runnerproto.Response) error { return checkBgSignal(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.BgSignal, nil
}

// checkBgSignal is BgSignal's post-condition: the status of the process asked for.
func checkBgSignal(q *runnerproto.BgSignalRequest, resp *runnerproto.Response) error {
	r := resp.BgSignal
	if r == nil {
		return badReply("no background signal result")
	}
	if !r.Unknown {
		return checkBgStatus(&r.Status, q.ID)
	}
	return nil
}

// BgEnd kills and removes the background processes of an owner, or of a whole session.
func (c *Client) BgEnd(ctx context.Context, q runnerproto.BgEndRequest) (*runnerproto.BgEndResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{BgEnd: &q}, checkBgEnd)
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.BgEnd, nil
}

// checkBgEnd is BgEnd's post-condition: counts that can be, owners that are names.
func checkBgEnd(resp *runnerproto.Response) error {
	r := resp.BgEnd
	if r == nil {
		return badReply("no background end result")
	}
	if r.Killed < 0 || r.Removed < 0 || len(r.Owners) > maxBgOwners {
		return badReply("a background end of %d killed, %d removed, %d owners", r.Killed, r.Removed, len(r.Owners))
	}
	for _, o := range r.Owners {
		if !bgOwnerName.MatchString(o) {
			return badReply("a background owner named %.80q", o)
		}
	}
	return nil
}

// checkBgStatus verifies one process's status; id, when not 0, is the one asked for.
func checkBgStatus(s *runnerproto.BgStatus, id int) error {
	if s.ID < 1 || (id != 0 && s.ID != id) {
		return badReply("the status of background process %d for %d", s.ID, id)
	}
	if s.PID < 2 || s.OutputBytes < 0 || s.Started < 0 || s.Ended < 0 {
		return badReply("background process %d: pid %d, %d bytes", s.ID, s.PID, s.OutputBytes)
	}
	if len(s.Argv) > maxBgArgvWords || len(s.Dir) > maxBgText || len(s.Signal) > 16 {
		return badReply("background process %d: a command of %d words", s.ID, len(s.Argv))
	}
	n := 0
	for _, a := range s.Argv {
		n += len(a)
	}
	if n > maxBgArgvBytes {
		return badReply("background process %d: a command of %d bytes", s.ID, n)
	}
	if s.ExitCode < -1 || s.ExitCode > 255 {
		return badReply("background process %d: exit status %d", s.ID, s.ExitCode)
	}
	if s.Running && (s.Lost || s.Signal != "" || s.ExitCode != 0) {
		return badReply("background process %d: running and ended", s.ID)
	}
	return checkBgPorts(s)
}

// checkBgPorts verifies the listening sockets of a status: a guest port and an IP address
// without a zone each, at most MaxBgPorts. They are the runner's word, which the agent can
// bend (the process group is its own), never a host address: the host dials them only
// through the guest's sshd.
func checkBgPorts(s *runnerproto.BgStatus) error {
	return checkPorts(fmt.Sprintf("background process %d", s.ID), s.Ports)
}

// checkPorts verifies listening sockets (of what says whose).
func checkPorts(what string, ports []runnerproto.BgPort) error {
	if len(ports) > runnerproto.MaxBgPorts {
		return badReply("%s: %d listening ports", what, len(ports))
	}
	for _, p := range ports {
		a, err := netip.ParseAddr(p.Addr)
		if p.Port < 1 || p.Port > 65535 || err != nil || a.Zone() != "" || len(p.Addr) > 64 {
			return badReply("%s: a listening port %d on %.80q", what, p.Port, p.Addr)
		}
	}
	return nil
}

// ShellPorts lists the listening sockets of the processes of a `limactl mcp shell` command
// (those marked q.Mark).
func (c *Client) ShellPorts(ctx context.Context, q runnerproto.ShellPortsRequest) (*runnerproto.ShellPortsResult, error) {
	resp, err := c.call(ctx, &runnerproto.Request{ShellPorts: &q}, func(resp *runnerproto.Response) error {
		if resp.ShellPorts == nil {
			return badReply("no shell ports")
		}
		return checkPorts("the shell's command", resp.ShellPorts.Ports)
	})
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.ShellPorts, nil
}

var bgOwnerName = regexp.MustCompile(runnerproto.BgNamePattern)
