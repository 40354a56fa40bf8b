package runnerclient

import (
	"context"
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// The runner names at most maxHeldBy processes that held a command's output, each in at most
// maxHeldByLen bytes.
const (
	maxHeldBy    = 16
	maxHeldByLen = 120
)

// Exec runs a command. When ctx ends first, the command's process group is killed and what it
// printed until then comes with ctx's error. An error reply is "the guest runner failed".
func (r *Client) Exec(ctx context.Context, q runnerproto.ExecRequest) (*runnerproto.ExecResult, error) {
	resp, err := r.call(ctx, &runnerproto.Request{Exec: &q}, func(resp *runnerproto.Response) error { return checkExec(&q, resp) })
	if resp == nil {
		return nil, err
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("the guest runner failed: %s", resp.Error)
	}
	return resp.Exec, err
}

// checkExec is Exec's post-condition: outputs within the bounds asked for, an exit that can be.
func checkExec(q *runnerproto.ExecRequest, resp *runnerproto.Response) error {
	x := resp.Exec
	if x == nil {
		return badReply("no exec result")
	}
	if err := checkOutput("stdout", x.Stdout, q.HeadBytes, q.TailBytes); err != nil {
		return err
	}
	if x.ExitCode < -1 || x.ExitCode > 255 || x.DurationMillis < 0 || len(x.Signal) > 16 || len(x.StartError) > maxText {
		return badReply("a command that ended with status %d, signal %.20q, after %d ms, start error of %d bytes", x.ExitCode, x.Signal, x.DurationMillis, len(x.StartError))
	}
	if len(x.HeldBy) > maxHeldBy {
		return badReply("%d processes holding the output, more than the %d the runner names", len(x.HeldBy), maxHeldBy)
	}
	for _, h := range x.HeldBy {
		if len(h) > maxHeldByLen {
			return badReply("a process description of %d bytes", len(h))
		}
	}
	return checkOutput("stderr", x.Stderr, q.HeadBytes, q.TailBytes)
}

// Hash returns the SHA-256 of guest files under root, one per path ("" for one that is not a
// regular file).
func (r *Client) Hash(ctx context.Context, root string, paths []tree.Name) ([]string, error) {
	q := &runnerproto.HashRequest{Root: root, Paths: paths}
	resp, err := r.call(ctx, &runnerproto.Request{Hash: q}, func(resp *runnerproto.Response) error { return checkHash(q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.Hash.Hashes, nil
}

// checkHash is Hash's post-condition: one digest (or "") per path.
func checkHash(q *runnerproto.HashRequest, resp *runnerproto.Response) error {
	if resp.Hash == nil {
		return badReply("no hash result")
	}
	if len(resp.Hash.Hashes) != len(q.Paths) {
		return badReply("%d hashes for %d paths", len(resp.Hash.Hashes), len(q.Paths))
	}
	for _, h := range resp.Hash.Hashes {
		if h != "" && !isHexSHA256(h) {
			return badReply("a hash that is not a SHA-256 digest (%.80q)", h)
		}
	}
	return nil
}

// ReadMany reads whole regular files under root in one request, each of at most each bytes,
// total in all (see runnerproto.ReadManyRequest): nil for a path the runner did not read, which
// the caller reads alone.
func (r *Client) ReadMany(ctx context.Context, root string, paths []tree.Name, each, total int64) ([][]byte, error) {
	q := &runnerproto.ReadManyRequest{Root: root, Paths: paths, Each: each, Total: total}
	resp, err := r.call(ctx, &runnerproto.Request{ReadMany: q}, func(resp *runnerproto.Response) error { return checkReadMany(q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	out := make([][]byte, len(paths))
	for i, f := range resp.ReadMany.Files {
		if f.OK {
			out[i] = f.Data
			if out[i] == nil {
				out[i] = []byte{} // an empty file, read
			}
		}
	}
	return out, nil
}

// checkReadMany is ReadMany's post-condition: one answer per path, none over each, all within
// total, no bytes for a file not read.
func checkReadMany(q *runnerproto.ReadManyRequest, resp *runnerproto.Response) error {
	if resp.ReadMany == nil {
		return badReply("no read-many result")
	}
	if len(resp.ReadMany.Files) != len(q.Paths) {
		return badReply("%d files read for %d paths", len(resp.ReadMany.Files), len(q.Paths))
	}
	var sum int64
	for _, f := range resp.ReadMany.Files {
		n := int64(len(f.Data))
		if !f.OK && n > 0 {
			return badReply("%d bytes of a file said not to be read", n)
		}
		if n > q.Each {
			return badReply("a file of %d bytes read, more than the %d asked for", n, q.Each)
		}
		if sum += n; sum > q.Total {
			return badReply("%d bytes read in all, more than the %d asked for", sum, q.Total)
		}
	}
	return nil
}

// Scan lists a guest tree.
func (r *Client) Scan(ctx context.Context, q runnerproto.ScanRequest) (*runnerproto.ScanResult, error) {
	resp, err := r.call(ctx, &runnerproto.Request{Scan: &q}, checkScan)
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.Scan, nil
}

// checkScan is Scan's post-condition: clean relative names, once each, nothing of a missing root.
func checkScan(resp *runnerproto.Response) error {
	if resp.Scan == nil {
		return badReply("no scan result")
	}
	if resp.Scan.RootMissing && len(resp.Scan.Entries)+len(resp.Scan.Also) > 0 {
		return badReply("a listing of a tree said to be missing")
	}
	for _, e := range resp.Scan.Errors {
		if len(e) > maxText {
			return badReply("a scan error of %d bytes", len(e))
		}
	}
	if err := checkEntries(resp.Scan.Entries); err != nil {
		return err
	}
	return checkEntries(resp.Scan.Also)
}

// Glob lists paths under dir matching pattern (`**` crosses directories).
func (r *Client) Glob(ctx context.Context, q runnerproto.GlobRequest) (*runnerproto.GlobResult, error) {
	resp, err := r.call(ctx, &runnerproto.Request{Glob: &q}, func(resp *runnerproto.Response) error { return checkGlob(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.Glob, nil
}

// checkGlob is Glob's post-condition: at most the matches asked for, each a clean absolute path.
func checkGlob(q *runnerproto.GlobRequest, resp *runnerproto.Response) error {
	if resp.Glob == nil {
		return badReply("no glob result")
	}
	if q.MaxMatches > 0 && len(resp.Glob.Matches) > q.MaxMatches {
		return badReply("%d glob matches, more than the %d asked for", len(resp.Glob.Matches), q.MaxMatches)
	}
	for _, m := range resp.Glob.Matches {
		if !isGuestPath(m) {
			return badReply("a glob match that is not an absolute path (%.80q)", m)
		}
	}
	if g := resp.Glob; (g.DirErrno != "" || g.NotDir) && (len(g.Matches) > 0 || g.Truncated) || !isErrnoName(g.DirErrno) {
		return badReply("matches in a directory said not to be one (%.20q)", g.DirErrno)
	}
	return nil
}

// List reads at most q.Max entries of a guest directory.
func (r *Client) List(ctx context.Context, q runnerproto.ListRequest) (*runnerproto.ListResult, error) {
	resp, err := r.call(ctx, &runnerproto.Request{List: &q}, func(resp *runnerproto.Response) error { return checkList(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.List, nil
}

// Ping asks the runner for a trivial answer (a one-entry listing of "/"): whether it answers.
func (r *Client) Ping(ctx context.Context) error {
	_, err := r.List(ctx, runnerproto.ListRequest{Dir: "/", Max: 1})
	return err
}

// checkList is List's post-condition: at most the entries asked for, each a name of a known type.
func checkList(q *runnerproto.ListRequest, resp *runnerproto.Response) error {
	if resp.List == nil {
		return badReply("no directory listing")
	}
	if len(resp.List.Entries) > q.Max {
		return badReply("%d directory entries, more than the %d asked for", len(resp.List.Entries), q.Max)
	}
	for _, e := range resp.List.Entries {
		n := string(e.Name)
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\x00") {
			return badReply("a directory entry named %q", n)
		}
		if e.Size < 0 {
			return badReply("a negative size for %q", n)
		}
		switch e.Type {
		case tree.File, tree.Dir, tree.Symlink, tree.Other:
		default:
			return badReply("a directory entry of unknown type %.40q", e.Type)
		}
		if len(e.Target) > maxGuestPath || (e.Target != "" && e.Type != tree.Symlink) {
			return badReply("a link target of %d bytes for %q", len(e.Target), n)
		}
	}
	if (resp.List.NotDir || resp.List.Errno != "") && len(resp.List.Entries) > 0 || !isErrnoName(resp.List.Errno) {
		return badReply("entries of something said not to be a directory (%.20q)", resp.List.Errno)
	}
	return nil
}

// Read reads at most q.Limit bytes of a guest regular file from q.Offset.
func (r *Client) Read(ctx context.Context, q runnerproto.ReadRequest) (*runnerproto.ReadResult, error) {
	resp, err := r.call(ctx, &runnerproto.Request{Read: &q}, func(resp *runnerproto.Response) error { return checkRead(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.Read, nil
}

// checkRead is Read's post-condition: no more than asked for, content only of a regular file.
func checkRead(q *runnerproto.ReadRequest, resp *runnerproto.Response) error {
	r := resp.Read
	if r == nil {
		return badReply("no file content")
	}
	if int64(len(r.Data)) > q.Limit {
		return badReply("%d bytes of file content, more than the %d asked for", len(r.Data), q.Limit)
	}
	if r.Size < 0 {
		return badReply("a negative file size")
	}
	if r.NotRegular != "" && r.NotRegular != tree.Dir && r.NotRegular != tree.Symlink && r.NotRegular != tree.Other {
		return badReply("a file type %.40q that is not in the protocol", r.NotRegular)
	}
	if r.NotRegular == tree.Symlink && q.Follow {
		return badReply("a link at the end of a path whose links were followed")
	}
	if (r.NotRegular != "" || r.Missing || r.Errno != "") && len(r.Data) > 0 || !isErrnoName(r.Errno) {
		return badReply("content for something that is not a regular file (%.20q)", r.Errno)
	}
	if r.Truncated && int64(len(r.Data)) != q.Limit {
		// A stream of reads would never end on "more" with nothing more.
		return badReply("%d bytes of file content said to be cut at the %d asked for", len(r.Data), q.Limit)
	}
	return nil
}

// Write replaces the content of a guest regular file (see runnerproto.WriteRequest).
func (r *Client) Write(ctx context.Context, q runnerproto.WriteRequest) (*runnerproto.WriteResult, error) {
	resp, err := r.call(ctx, &runnerproto.Request{Write: &q}, checkWrite)
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.Write, nil
}

// checkWrite is Write's post-condition: a file type of the protocol, an errno of a sane length.
func checkWrite(resp *runnerproto.Response) error {
	r := resp.Write
	if r == nil {
		return badReply("no write result")
	}
	if r.NotRegular != "" && r.NotRegular != tree.Dir && r.NotRegular != tree.Other {
		return badReply("a file type %.40q that is not in the protocol", r.NotRegular)
	}
	if !isErrnoName(r.Errno) || len(r.Error) > 4096 {
		return badReply("an error of %d+%d bytes", len(r.Errno), len(r.Error))
	}
	return nil
}

// Edit replaces text in a guest regular file in one request (see runnerproto.EditRequest).
func (r *Client) Edit(ctx context.Context, q runnerproto.EditRequest) (*runnerproto.EditResult, error) {
	resp, err := r.call(ctx, &runnerproto.Request{Edit: &q}, func(resp *runnerproto.Response) error { return checkEdit(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.Edit, nil
}

// checkEdit is Edit's post-condition: a written file only when the request allowed it, counts
// and sizes that can be, a write result as Write's.
func checkEdit(q *runnerproto.EditRequest, resp *runnerproto.Response) error {
	e := resp.Edit
	if e == nil {
		return badReply("no edit result")
	}
	if e.NotRegular != "" && e.NotRegular != tree.Dir && e.NotRegular != tree.Other {
		return badReply("a file type %.40q that is not in the protocol", e.NotRegular)
	}
	if !isErrnoName(e.Errno) || e.Size < 0 || e.Found < 0 {
		return badReply("an edit with errno %.20q, size %d, %d found", e.Errno, e.Size, e.Found)
	}
	if e.Replaced != 0 && (q.Old == "" || e.Replaced != q.Count || e.Found != q.Count) {
		return badReply("%d replacements of %d found, %d asked for", e.Replaced, e.Found, q.Count)
	}
	if e.Created && q.Old != "" || e.Created && e.Replaced != 0 {
		return badReply("a file created by an edit that replaces text")
	}
	if (e.Created || e.Replaced != 0) && (e.Write == nil || e.Write.Errno != "" || e.Write.NotRegular != "" || e.Write.Error != "") {
		return badReply("a file written whose write failed")
	}
	if e.Write != nil {
		return checkWrite(&runnerproto.Response{Write: e.Write})
	}
	return nil
}

// isErrnoName says whether s is "" or could name an errno: E and capitals or digits, short.
func isErrnoName(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > 16 || s[0] != 'E' {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Grep searches file contents under q.Dir like `git grep -n --no-index`.
func (r *Client) Grep(ctx context.Context, q runnerproto.GrepRequest) (*runnerproto.GrepResult, error) {
	resp, err := r.call(ctx, &runnerproto.Request{Grep: &q}, func(resp *runnerproto.Response) error { return checkGrep(&q, resp) })
	if err := result(resp, err); err != nil {
		return nil, err
	}
	return resp.Grep, nil
}

// checkGrep is Grep's post-condition: no more output than asked for, a known engine.
func checkGrep(q *runnerproto.GrepRequest, resp *runnerproto.Response) error {
	if resp.Grep == nil {
		return badReply("no search result")
	}
	if q.MaxBytes > 0 && len(resp.Grep.Output) > q.MaxBytes {
		return badReply("%d bytes of search output, more than the %d asked for", len(resp.Grep.Output), q.MaxBytes)
	}
	if g := resp.Grep; len(g.Error) > maxErrorText || (g.Engine != "" && g.Engine != "git" && g.Engine != "builtin") {
		return badReply("a search by engine %.20q with an error of %d bytes", g.Engine, len(g.Error))
	}
	return nil
}
