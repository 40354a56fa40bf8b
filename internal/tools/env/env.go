// Package env is the one object the MCP tools call to work in a guest: the agent's
// environment (container-use's Environment is the model): files (stat, list, read, write),
// searches, commands in the foreground and in the background. It takes host paths, as the
// agent gives them, and gives host paths and text back: the mapping to the guest copy
// (internal/workspace) and the guest connection (internal/guest) are behind it, and no tool
// holds either. It is not the tools' wording of errors or results (package tools), nor the
// staged session and its checkpoints (internal/staging).
package env

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// Guest is the guest a server's tools work in, before any workspace: what needs no path.
type Guest struct{ conn *guest.Conn }

// NewGuest returns the guest over conn.
func NewGuest(conn *guest.Conn) *Guest { return &Guest{conn: conn} }

// In is the environment of a call: the guest seen through the workspace ws.
func (g *Guest) In(ws *workspace.Workspace) *Env { return &Env{g: g, ws: ws} }

// Agent is the agent user of the connection's network policy (nil without one).
func (g *Guest) Agent() *guest.Agent { return g.conn.Agent() }

// BlockedSince is what the network policy refused since (see staging.BlockedSince).
func (g *Guest) BlockedSince(ctx context.Context, since time.Time) []netpolicy.Entry {
	return staging.BlockedSince(ctx, g.conn, since)
}

// HeldNow is what the network policy holds now for the person to decide on (see
// staging.HeldNow).
func (g *Guest) HeldNow(ctx context.Context) []netpolicy.HeldConn {
	return staging.HeldNow(ctx, g.conn)
}

// EndBackground ends (or lists, with ListOnly) background processes of a group: no paths.
func (g *Guest) EndBackground(ctx context.Context, req runnerproto.BgEndRequest) (*runnerproto.BgEndResult, error) {
	return g.conn.BgEnd(ctx, req)
}

// Env is the guest seen through one workspace: every path in and out is a host path.
type Env struct {
	g  *Guest
	ws *workspace.Workspace
}

// DefaultDir is the workspace's default directory (a host path).
func (e *Env) DefaultDir() string { return e.ws.DefaultDir() }

// guestPath is the path in the guest of p, or why the agent may not use it.
func (e *Env) guestPath(p string) (string, error) { return e.ws.ToGuest(p) }

// Check says whether path may be used (it maps into the guest), without reaching the guest.
func (e *Env) Check(path string) error {
	_, err := e.guestPath(path)
	return err
}

// Stat stats path in the guest (following links).
func (e *Env) Stat(ctx context.Context, path string) (fs.FileInfo, error) {
	gp, err := e.guestPath(path)
	if err != nil {
		return nil, err
	}
	sc, err := e.g.conn.SFTP(ctx)
	if err != nil {
		return nil, err
	}
	return sc.Stat(gp)
}

// List reads at most max entries of the directory path through the runner (guest.ErrNoRunner
// without it); link targets are host paths.
func (e *Env) List(ctx context.Context, dir string, max int) (*runnerproto.ListResult, error) {
	gp, err := e.guestPath(dir)
	if err != nil {
		return nil, err
	}
	lr, err := e.g.conn.List(ctx, gp, max)
	if err != nil {
		return nil, err
	}
	out := *lr
	out.Entries = make([]runnerproto.ListEntry, len(lr.Entries))
	for i, le := range lr.Entries {
		if le.Target != "" {
			le.Target = tree.Name(e.ws.ToHost(string(le.Target)))
		}
		out.Entries[i] = le
	}
	return &out, nil
}

// DirEntry is an entry of ReadDir: its information, and its target (a host path) when it is
// a symbolic link whose target could be read.
type DirEntry struct {
	fs.FileInfo
	LinkTarget string
}

// ReadDir lists the directory path over SFTP, every entry (the fallback of List).
func (e *Env) ReadDir(ctx context.Context, dir string) ([]DirEntry, error) {
	gp, err := e.guestPath(dir)
	if err != nil {
		return nil, err
	}
	sc, err := e.g.conn.SFTP(ctx)
	if err != nil {
		return nil, err
	}
	ents, err := sc.ReadDirContext(ctx, gp)
	if err != nil {
		return nil, err
	}
	out := make([]DirEntry, len(ents))
	for i, f := range ents {
		out[i].FileInfo = f
		if f.Mode()&fs.ModeSymlink != 0 {
			if target, err := sc.ReadLink(path.Join(gp, f.Name())); err == nil {
				out[i].LinkTarget = e.ws.ToHost(target)
			}
		}
	}
	return out, nil
}

// Open opens, for streaming, the regular file path leads to (its links followed in the guest):
// it never blocks on a special file the agent swapped in (a *guest.NotRegularError, which says
// what it is). Through the runner, a file of up to one chunk is one request.
func (e *Env) Open(ctx context.Context, path string) (*guest.FileReader, error) {
	gp, err := e.guestPath(path)
	if err != nil {
		return nil, err
	}
	return e.g.conn.OpenFollowing(ctx, gp)
}

// Edit replaces text in the regular file path leads to, in one request through the runner
// (see guest.Conn.Edit; req.Path is a host path).
func (e *Env) Edit(ctx context.Context, req runnerproto.EditRequest) (*runnerproto.EditResult, error) {
	gp, err := e.guestPath(req.Path)
	if err != nil {
		return nil, err
	}
	req.Path = gp
	return e.g.conn.Edit(ctx, req)
}

// WriteFile sets the content of the regular file path (mode 0644 when it is created), making
// its missing parent directories (see guest.Conn.WriteFile).
func (e *Env) WriteFile(ctx context.Context, path string, data []byte) error {
	gp, err := e.guestPath(path)
	if err != nil {
		return err
	}
	return e.g.conn.WriteFile(ctx, gp, data, 0o644, true)
}

// Glob lists at most max paths under dir matching pattern (`**` crosses directories), as host
// paths.
func (e *Env) Glob(ctx context.Context, dir, pattern string, max int) (matches []string, truncated bool, err error) {
	gp, err := e.guestPath(dir)
	if err != nil {
		return nil, false, err
	}
	r, err := e.g.conn.Glob(ctx, gp, pattern, max)
	if err != nil {
		return nil, false, err
	}
	matches = make([]string, len(r.Matches))
	for i, m := range r.Matches {
		matches[i] = e.ws.ToHost(m)
	}
	return matches, r.Truncated, nil
}

// Grep searches file contents under req.Dir (a host path) like `git grep -n --no-index`; the
// output names host paths.
func (e *Env) Grep(ctx context.Context, req runnerproto.GrepRequest) (*runnerproto.GrepResult, error) {
	gp, err := e.guestPath(req.Dir)
	if err != nil {
		return nil, err
	}
	req.Dir = gp
	r, err := e.g.conn.Grep(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *r
	out.Output = e.ws.HostText(r.Output)
	return &out, nil
}

// RunRequest is a command run in the foreground.
type RunRequest struct {
	Argv    []string
	Dir     string // a host path
	Timeout time.Duration
	// HeadBytes and TailBytes bound what is kept of each output stream.
	HeadBytes, TailBytes int
}

// RunResult is how a command ended, with its output as host text.
type RunResult struct {
	// Stdout and Stderr are what was kept of each stream, with a marker where bytes were cut
	// (StdoutCutBytes, StderrCutBytes).
	Stdout, Stderr                 string
	StdoutCutBytes, StderrCutBytes int64
	ExitCode                       int
	Signal                         string
	TimedOut                       bool
	DirMissing                     bool
	HeldBy                         []string
}

// Run runs a command in the guest (see guest.Conn.Exec).
func (e *Env) Run(ctx context.Context, req RunRequest) (*RunResult, error) {
	gp, err := e.guestPath(req.Dir)
	if err != nil {
		return nil, err
	}
	r, err := e.g.conn.Exec(ctx, guest.ExecRequest{Argv: req.Argv, Dir: gp, Timeout: req.Timeout, HeadBytes: req.HeadBytes, TailBytes: req.TailBytes})
	if err != nil {
		return nil, err
	}
	res := &RunResult{ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, DirMissing: r.DirMissing, HeldBy: r.HeldBy}
	res.Stdout, res.StdoutCutBytes = joinOutput(r.Stdout)
	res.Stderr, res.StderrCutBytes = joinOutput(r.Stderr)
	res.Stdout, res.Stderr = e.ws.HostText(res.Stdout), e.ws.HostText(res.Stderr)
	return res, nil
}

// joinOutput returns what was kept of a stream, with a marker where bytes were cut.
func joinOutput(o headtail.Output) (string, int64) {
	cut := o.Total - int64(len(o.Head)) - int64(len(o.Tail))
	if cut <= 0 {
		return string(o.Head) + string(o.Tail), 0
	}
	return fmt.Sprintf("%s\n[... %d bytes cut: the output was %d bytes; redirect it to a file and read parts of it to see everything ...]\n%s", o.Head, cut, o.Total, o.Tail), cut
}

// StartBackground starts a background process (req.Dir a host path); a start error is host
// text.
func (e *Env) StartBackground(ctx context.Context, req runnerproto.BgStartRequest) (*runnerproto.BgStartResult, error) {
	gp, err := e.guestPath(req.Dir)
	if err != nil {
		return nil, err
	}
	req.Dir = gp
	r, err := e.g.conn.BgStart(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *r
	out.StartError = e.ws.HostText(r.StartError)
	return &out, nil
}

// ReadBackground reads a background process's output (host text) and status.
func (e *Env) ReadBackground(ctx context.Context, req runnerproto.BgReadRequest) (*runnerproto.BgReadResult, error) {
	r, err := e.g.conn.BgRead(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *r
	out.Data = []byte(e.ws.HostText(string(r.Data)))
	out.Status = e.hostStatus(r.Status)
	return &out, nil
}

// ListBackground lists a group's background processes.
func (e *Env) ListBackground(ctx context.Context, req runnerproto.BgListRequest) (*runnerproto.BgListResult, error) {
	r, err := e.g.conn.BgList(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *r
	out.Processes = make([]runnerproto.BgStatus, len(r.Processes))
	for i, s := range r.Processes {
		out.Processes[i] = e.hostStatus(s)
	}
	return &out, nil
}

// SignalBackground signals a background process's group (then SIGKILL after the grace period).
func (e *Env) SignalBackground(ctx context.Context, req runnerproto.BgSignalRequest) (*runnerproto.BgSignalResult, error) {
	r, err := e.g.conn.BgSignal(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *r
	out.Status = e.hostStatus(r.Status)
	return &out, nil
}

// hostStatus is s with its directory a host path.
func (e *Env) hostStatus(s runnerproto.BgStatus) runnerproto.BgStatus {
	s.Dir = e.ws.ToHost(s.Dir)
	return s
}
