package guest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/gitgrep"
	"github.com/limactl-mcp/limactl-mcp/internal/globfs"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// The results and requests of the guest's operations are the runner's messages: guest is the
// one client of the wire, and the rest of the program speaks these names, never the protocol's.
type (
	GlobResult  = runnerproto.GlobResult
	GrepRequest = runnerproto.GrepRequest
	GrepResult  = runnerproto.GrepResult
	ScanRequest = runnerproto.ScanRequest
	ScanResult  = runnerproto.ScanResult
	ListResult  = runnerproto.ListResult
)

// Glob lists paths under dir matching pattern (`**` crosses directories).
func (c *Conn) Glob(ctx context.Context, dir, pattern string, maxMatches int) (*GlobResult, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	if l.runner == nil {
		return globSFTP(l, dir, pattern, maxMatches)
	}
	resp, err := c.call(ctx, l, &runnerproto.Request{Glob: &runnerproto.GlobRequest{Dir: dir, Pattern: pattern, MaxMatches: maxMatches}})
	if err != nil {
		return nil, err
	}
	if resp.Glob == nil {
		return nil, errors.New("the guest runner sent no glob result")
	}
	return resp.Glob, nil
}

func globSFTP(l *link, dir, pattern string, maxMatches int) (*GlobResult, error) {
	m, truncated, err := globfs.Glob(func(root string) fs.FS { return sftpFS{c: l.sftp, root: root} }, dir, pattern, maxMatches)
	if err != nil {
		return nil, err
	}
	return &GlobResult{Matches: m, Truncated: truncated}, nil
}

// Grep searches file contents under dir like `git grep -n --no-index`.
func (c *Conn) Grep(ctx context.Context, req GrepRequest) (*GrepResult, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	if l.runner == nil {
		return grepSession(ctx, c, req)
	}
	resp, err := c.call(ctx, l, &runnerproto.Request{Grep: &req})
	if err != nil {
		return nil, err
	}
	if resp.Grep == nil {
		return nil, errors.New("the guest runner sent no search result")
	}
	return resp.Grep, nil
}

func grepSession(ctx context.Context, c *Conn, req runnerproto.GrepRequest) (*runnerproto.GrepResult, error) {
	res, err := c.Exec(ctx, ExecRequest{Argv: gitgrep.Args(req.Pattern, req.Include), Dir: req.Dir, HeadBytes: req.MaxBytes})
	if err != nil {
		return nil, err
	}
	out := &runnerproto.GrepResult{Engine: "git", Output: string(res.Stdout.Head)}
	if res.Stdout.Total > int64(len(res.Stdout.Head)) {
		out.Truncated = true
		if i := strings.LastIndexByte(out.Output, '\n'); i >= 0 {
			out.Output = out.Output[:i+1]
		}
	}
	stderr := strings.TrimSpace(string(res.Stderr.Head))
	switch res.ExitCode {
	case 0:
	case 1:
		if stderr != "" {
			out.Error = stderr
		}
	case 127:
		return nil, fmt.Errorf("git is not installed in the guest and the guest runner is not running; install git in the guest or use run_shell_command with grep")
	default:
		out.Error = stderr
		out.BadPattern = gitgrep.IsBadPatternMessage(stderr)
	}
	return out, nil
}
