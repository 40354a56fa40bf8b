package guest

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/gitgrep"
	"github.com/limactl-mcp/limactl-mcp/internal/globfs"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Glob lists paths under dir matching pattern (`**` crosses directories), dir looked at in the
// same request: a missing dir is fs.ErrNotExist, one that is not a directory ErrNotDir.
func (c *Conn) Glob(ctx context.Context, dir, pattern string, maxMatches int) (*runnerproto.GlobResult, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	return l.ops.glob(ctx, c, l, dir, pattern, maxMatches)
}

func (b runnerBackend) glob(ctx context.Context, c *Conn, l *link, dir, pattern string, maxMatches int) (*runnerproto.GlobResult, error) {
	res, err := b.r.Glob(ctx, runnerproto.GlobRequest{Dir: dir, Pattern: pattern, MaxMatches: maxMatches})
	if err = c.dropIf(l, err); err != nil {
		return nil, err
	}
	switch {
	case res.DirErrno != "":
		return nil, lookupError("glob", dir, res.DirErrno)
	case res.NotDir:
		return nil, fmt.Errorf("glob %s: %w", dir, ErrNotDir)
	}
	return res, nil
}

// glob over SFTP (doublestar on an fs.FS of the guest), after a stat of dir.
func (sessionBackend) glob(_ context.Context, _ *Conn, l *link, dir, pattern string, maxMatches int) (*runnerproto.GlobResult, error) {
	if fi, err := l.sftp.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("glob %s: %w", dir, ErrNotDir)
	}
	m, truncated, err := globfs.Glob(func(root string) fs.FS { return sftpFS{c: l.sftp, root: root} }, dir, pattern, maxMatches)
	if err != nil {
		return nil, err
	}
	return &runnerproto.GlobResult{Matches: m, Truncated: truncated}, nil
}

// Grep searches file contents under dir like `git grep -n --no-index`.
func (c *Conn) Grep(ctx context.Context, req runnerproto.GrepRequest) (*runnerproto.GrepResult, error) {
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	return l.ops.grep(ctx, c, l, req)
}

func (b runnerBackend) grep(ctx context.Context, c *Conn, l *link, req runnerproto.GrepRequest) (*runnerproto.GrepResult, error) {
	res, err := b.r.Grep(ctx, req)
	return res, c.dropIf(l, err)
}

// grep with git grep in a session of its own.
func (sessionBackend) grep(ctx context.Context, c *Conn, _ *link, req runnerproto.GrepRequest) (*runnerproto.GrepResult, error) {
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
