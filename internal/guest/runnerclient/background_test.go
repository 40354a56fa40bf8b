package runnerclient

import (
	"errors"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// A runner the agent replaced cannot make the host believe nonsense about background
// processes, nor flood it: each reply is checked against its request.
func TestCheckReplyBackground(t *testing.T) {
	start := &runnerproto.Request{BgStart: &runnerproto.BgStartRequest{}}
	read := &runnerproto.Request{BgRead: &runnerproto.BgReadRequest{ID: 3, Max: 10}}
	list := &runnerproto.Request{BgList: &runnerproto.BgListRequest{Max: 2}}
	signal := &runnerproto.Request{BgSignal: &runnerproto.BgSignalRequest{ID: 3}}
	end := &runnerproto.Request{BgEnd: &runnerproto.BgEndRequest{Group: "s"}}
	ok := runnerproto.BgStatus{ID: 3, PID: 77, Argv: []string{"sleep", "9"}, Running: true, OutputBytes: 100}
	with := func(f func(*runnerproto.BgStatus)) runnerproto.BgStatus {
		s := ok
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		req  *runnerproto.Request
		resp *runnerproto.Response
		ok   bool
	}{
		{"a start", start, &runnerproto.Response{BgStart: &runnerproto.BgStartResult{ID: 1, PID: 77}}, true},
		{"no start result", start, &runnerproto.Response{}, false},
		{"an id without a pid", start, &runnerproto.Response{BgStart: &runnerproto.BgStartResult{ID: 1}}, false},
		{"pid 1", start, &runnerproto.Response{BgStart: &runnerproto.BgStartResult{ID: 1, PID: 1}}, false},
		{"a start error at length", start, &runnerproto.Response{BgStart: &runnerproto.BgStartResult{StartError: strings.Repeat("x", maxBgText+1)}}, false},
		{"a read", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Data: []byte("abc"), Offset: 5, Next: 8, Status: ok}}, true},
		{"more than asked", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Data: make([]byte, 11), Next: 11, Status: ok}}, false},
		{"a next offset that lies", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Data: []byte("abc"), Next: 9, Status: ok}}, false},
		{"a negative offset", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Offset: -4, Next: -4, Status: ok}}, false},
		{"another id's status", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.ID = 4 })}}, false},
		{"running and ended", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.Signal = "SIGKILL" })}}, false},
		{"a negative size", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.OutputBytes = -1 })}}, false},
		{"a listening port", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.Ports = []runnerproto.BgPort{{Port: 8000, Addr: "::"}} })}}, true},
		{"port 0", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.Ports = []runnerproto.BgPort{{Port: 0, Addr: "::"}} })}}, false},
		{"port 65536", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.Ports = []runnerproto.BgPort{{Port: 65536, Addr: "::"}} })}}, false},
		{"a host name for an address", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.Ports = []runnerproto.BgPort{{Port: 80, Addr: "evil.example"}} })}}, false},
		{"a zoned address", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.Ports = []runnerproto.BgPort{{Port: 80, Addr: "fe80::1%eth0"}} })}}, false},
		{"too many ports", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.Ports = make([]runnerproto.BgPort, 33) })}}, false},
		{"a command at length", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Status: with(func(s *runnerproto.BgStatus) { s.Argv = []string{strings.Repeat("x", maxBgArgvBytes+1)} })}}, false},
		{"an unknown id", read, &runnerproto.Response{BgRead: &runnerproto.BgReadResult{Unknown: true}}, true},
		{"a list", list, &runnerproto.Response{BgList: &runnerproto.BgListResult{Processes: []runnerproto.BgStatus{ok, with(func(s *runnerproto.BgStatus) { s.ID = 9 })}}}, true},
		{"a list longer than asked", list, &runnerproto.Response{BgList: &runnerproto.BgListResult{Processes: []runnerproto.BgStatus{ok, ok, ok}}}, false},
		{"a listed pid 0", list, &runnerproto.Response{BgList: &runnerproto.BgListResult{Processes: []runnerproto.BgStatus{with(func(s *runnerproto.BgStatus) { s.PID = 0 })}}}, false},
		{"a signal", signal, &runnerproto.Response{BgSignal: &runnerproto.BgSignalResult{Status: with(func(s *runnerproto.BgStatus) { s.Running, s.Signal = false, "SIGTERM" })}}, true},
		{"no signal result", signal, &runnerproto.Response{}, false},
		{"an end", end, &runnerproto.Response{BgEnd: &runnerproto.BgEndResult{Killed: 2, Owners: []string{"123-ab"}}}, true},
		{"an owner that is a path", end, &runnerproto.Response{BgEnd: &runnerproto.BgEndResult{Owners: []string{"../x"}}}, false},
		{"a negative count", end, &runnerproto.Response{BgEnd: &runnerproto.BgEndResult{Killed: -1}}, false},
	} {
		err := checkReply(tc.req, tc.resp)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadReply)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
