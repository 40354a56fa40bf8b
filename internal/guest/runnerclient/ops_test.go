package runnerclient

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// The fields added for output holders and writes are checked like every other: a runner the
// agent replaced cannot flood the host or the agent with them, nor send a type outside the
// protocol.
func TestCheckReplyHeldByAndWrite(t *testing.T) {
	exec := &runnerproto.Request{Exec: &runnerproto.ExecRequest{HeadBytes: 10, TailBytes: 10}}
	write := &runnerproto.Request{Write: &runnerproto.WriteRequest{Path: "/x"}}
	many := make([]string, maxHeldBy+1)
	for _, tc := range []struct {
		name string
		req  *runnerproto.Request
		resp *runnerproto.Response
		ok   bool
	}{
		{"held by a few", exec, &runnerproto.Response{Exec: &runnerproto.ExecResult{HeldBy: []string{"pid 1 (sleep 9)"}}}, true},
		{"held by too many", exec, &runnerproto.Response{Exec: &runnerproto.ExecResult{HeldBy: many}}, false},
		{"a holder described at length", exec, &runnerproto.Response{Exec: &runnerproto.ExecResult{HeldBy: []string{strings.Repeat("x", maxHeldByLen+1)}}}, false},
		{"a write done", write, &runnerproto.Response{Write: &runnerproto.WriteResult{}}, true},
		{"no write result", write, &runnerproto.Response{}, false},
		{"a write refused for a directory", write, &runnerproto.Response{Write: &runnerproto.WriteResult{NotRegular: tree.Dir}}, true},
		{"a type outside the protocol", write, &runnerproto.Response{Write: &runnerproto.WriteResult{NotRegular: "symlink"}}, false},
		{"an errno of any length", write, &runnerproto.Response{Write: &runnerproto.WriteResult{Errno: strings.Repeat("E", 17)}}, false},
		{"an error of any length", write, &runnerproto.Response{Write: &runnerproto.WriteResult{Errno: "ENOSPC", Error: strings.Repeat("x", 4097)}}, false},
	} {
		if err := checkReply(tc.req, tc.resp); (err == nil) != tc.ok {
			t.Errorf("%s: checkReply = %v", tc.name, err)
		}
	}
}

// checkReply is the post-condition of the method that sends req, applied to resp as that
// method's call applies it: the tables above name a request and a reply, not a method.
func checkReply(req *runnerproto.Request, resp *runnerproto.Response) error {
	if err := checkErrorReply(resp); err != nil || resp.Error != "" {
		return err
	}
	switch {
	case req.Exec != nil:
		return checkExec(req.Exec, resp)
	case req.Hash != nil:
		return checkHash(req.Hash, resp)
	case req.Scan != nil:
		return checkScan(resp)
	case req.Glob != nil:
		return checkGlob(req.Glob, resp)
	case req.List != nil:
		return checkList(req.List, resp)
	case req.Read != nil:
		return checkRead(req.Read, resp)
	case req.Write != nil:
		return checkWrite(resp)
	case req.Grep != nil:
		return checkGrep(req.Grep, resp)
	case req.BgStart != nil:
		return checkBgStart(resp)
	case req.BgRead != nil:
		return checkBgRead(req.BgRead, resp)
	case req.BgList != nil:
		return checkBgList(req.BgList, resp)
	case req.BgSignal != nil:
		return checkBgSignal(req.BgSignal, resp)
	case req.BgEnd != nil:
		return checkBgEnd(resp)
	case req.CkptCreate != nil:
		return checkCkptCreate(req.CkptCreate, resp)
	case req.CkptList != nil:
		return checkCkptList(resp)
	case req.CkptRestore != nil:
		return checkCkptRestore(req.CkptRestore, resp)
	case req.CkptManifest != nil:
		return checkCkptManifest(req.CkptManifest, resp)
	}
	return nil
}
