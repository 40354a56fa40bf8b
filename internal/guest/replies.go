package guest

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Every reply of the runner is hostile input: the agent can replace the runner's file, or
// anything the runner reads. Each reply is checked here before anyone uses it, and a reply
// that does not fit its request is an error that names the runner, never a panic.

// errBadReply wraps every malformed reply.
var errBadReply = errors.New("the guest runner sent a malformed reply (it may have been replaced in the guest; the next call starts it again)")

func badReply(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadReply, fmt.Sprintf(format, args...))
}

// callDeadline bounds how long the host waits for the runner's reply to req. A runner that
// never answers (a hostile one, or one whose reply it cannot send) must not hang a review or a
// tool call: past the deadline the call fails and the connection is started again.
func callDeadline(req *runnerproto.Request) time.Duration {
	slack := replySlack
	switch {
	case req.Exec != nil:
		if req.Exec.TimeoutMillis > 0 {
			return time.Duration(req.Exec.TimeoutMillis)*time.Millisecond + slack
		}
		return 0 // no timeout asked: the caller's context bounds it
	case req.Scan != nil, req.CkptCreate != nil, req.CkptRestore != nil:
		return 10 * time.Minute // a 200k-file tree on an emulated guest
	default:
		return 5 * time.Minute
	}
}

// replySlack is how long after a command's own timeout its reply may still come (the runner
// kills the process group, then collects what it printed).
var replySlack = 30 * time.Second

// The runner names at most maxHeldBy processes that held a command's output, each in at most
// maxHeldByLen bytes.
const (
	maxHeldBy    = 16
	maxHeldByLen = 120
)

// Caps on the free text of a reply: an error's message, a command's start error, a search's.
const (
	maxErrorText = 64 << 10
	maxText      = 4096
	maxGuestPath = 16 << 10
)

// checkReply verifies that resp answers req with what req asked for and no more.
func checkReply(req *runnerproto.Request, resp *runnerproto.Response) error {
	if resp.Error != "" {
		if len(resp.Error) > maxErrorText {
			return badReply("an error message of %d bytes", len(resp.Error))
		}
		return nil // an error reply is just that
	}
	if req.BgStart != nil || req.BgRead != nil || req.BgList != nil || req.BgSignal != nil || req.BgEnd != nil {
		return checkBgReply(req, resp)
	}
	if req.CkptCreate != nil || req.CkptList != nil || req.CkptRestore != nil || req.CkptManifest != nil {
		return checkCkptReply(req, resp)
	}
	switch {
	case req.Exec != nil:
		if resp.Exec == nil {
			return badReply("no exec result")
		}
		if err := checkOutput("stdout", resp.Exec.Stdout, req.Exec.HeadBytes, req.Exec.TailBytes); err != nil {
			return err
		}
		x := resp.Exec
		if x.ExitCode < -1 || x.ExitCode > 255 || x.DurationMillis < 0 || len(x.Signal) > 16 || len(x.StartError) > maxText {
			return badReply("a command that ended with status %d, signal %.20q, after %d ms, start error of %d bytes", x.ExitCode, x.Signal, x.DurationMillis, len(x.StartError))
		}
		if len(resp.Exec.HeldBy) > maxHeldBy {
			return badReply("%d processes holding the output, more than the %d the runner names", len(resp.Exec.HeldBy), maxHeldBy)
		}
		for _, h := range resp.Exec.HeldBy {
			if len(h) > maxHeldByLen {
				return badReply("a process description of %d bytes", len(h))
			}
		}
		return checkOutput("stderr", resp.Exec.Stderr, req.Exec.HeadBytes, req.Exec.TailBytes)
	case req.Hash != nil:
		if resp.Hash == nil {
			return badReply("no hash result")
		}
		if len(resp.Hash.Hashes) != len(req.Hash.Paths) {
			return badReply("%d hashes for %d paths", len(resp.Hash.Hashes), len(req.Hash.Paths))
		}
		for _, h := range resp.Hash.Hashes {
			if h != "" && !isHexSHA256(h) {
				return badReply("a hash that is not a SHA-256 digest (%.80q)", h)
			}
		}
	case req.Scan != nil:
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
	case req.Glob != nil:
		if resp.Glob == nil {
			return badReply("no glob result")
		}
		if req.Glob.MaxMatches > 0 && len(resp.Glob.Matches) > req.Glob.MaxMatches {
			return badReply("%d glob matches, more than the %d asked for", len(resp.Glob.Matches), req.Glob.MaxMatches)
		}
		for _, m := range resp.Glob.Matches {
			if !isGuestPath(m) {
				return badReply("a glob match that is not an absolute path (%.80q)", m)
			}
		}
	case req.List != nil:
		if resp.List == nil {
			return badReply("no directory listing")
		}
		if len(resp.List.Entries) > req.List.Max {
			return badReply("%d directory entries, more than the %d asked for", len(resp.List.Entries), req.List.Max)
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
		if resp.List.NotDir && len(resp.List.Entries) > 0 {
			return badReply("entries of something said not to be a directory")
		}
	case req.Read != nil:
		r := resp.Read
		if r == nil {
			return badReply("no file content")
		}
		if int64(len(r.Data)) > req.Read.Limit {
			return badReply("%d bytes of file content, more than the %d asked for", len(r.Data), req.Read.Limit)
		}
		if r.Size < 0 {
			return badReply("a negative file size")
		}
		if r.NotRegular != "" && r.NotRegular != tree.Dir && r.NotRegular != tree.Symlink && r.NotRegular != tree.Other {
			return badReply("a file type %.40q that is not in the protocol", r.NotRegular)
		}
		if (r.NotRegular != "" || r.Missing) && len(r.Data) > 0 {
			return badReply("content for something that is not a regular file")
		}
		if r.Truncated && int64(len(r.Data)) != req.Read.Limit {
			// A stream of reads would never end on "more" with nothing more.
			return badReply("%d bytes of file content said to be cut at the %d asked for", len(r.Data), req.Read.Limit)
		}
	case req.Write != nil:
		r := resp.Write
		if r == nil {
			return badReply("no write result")
		}
		if r.NotRegular != "" && r.NotRegular != tree.Dir && r.NotRegular != tree.Other {
			return badReply("a file type %.40q that is not in the protocol", r.NotRegular)
		}
		if len(r.Errno) > 16 || len(r.Error) > 4096 {
			return badReply("an error of %d+%d bytes", len(r.Errno), len(r.Error))
		}
	case req.Grep != nil:
		if resp.Grep == nil {
			return badReply("no search result")
		}
		if req.Grep.MaxBytes > 0 && len(resp.Grep.Output) > req.Grep.MaxBytes {
			return badReply("%d bytes of search output, more than the %d asked for", len(resp.Grep.Output), req.Grep.MaxBytes)
		}
		if g := resp.Grep; len(g.Error) > maxErrorText || (g.Engine != "" && g.Engine != "git" && g.Engine != "builtin") {
			return badReply("a search by engine %.20q with an error of %d bytes", g.Engine, len(g.Error))
		}
	}
	return nil
}

func checkOutput(name string, o headtail.Output, head, tail int) error {
	if len(o.Head) > head || len(o.Tail) > tail {
		return badReply("%s of %d+%d bytes, more than the %d+%d asked for", name, len(o.Head), len(o.Tail), head, tail)
	}
	if o.Total < int64(len(o.Head)+len(o.Tail)) {
		return badReply("%s counts %d bytes but carries %d", name, o.Total, len(o.Head)+len(o.Tail))
	}
	return nil
}

// checkEntries verifies a scan listing: clean relative names, once each, of a known type,
// with sizes that are not negative.
func checkEntries(es []tree.Entry) error {
	seen := make(map[tree.Name]bool, len(es))
	for _, e := range es {
		p := string(e.Path)
		if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) {
			return badReply("a listed path that is not a clean relative path (%q)", p)
		}
		if seen[e.Path] {
			return badReply("%q listed twice", p)
		}
		seen[e.Path] = true
		switch e.Type {
		case tree.File, tree.Dir, tree.Symlink, tree.Other:
		default:
			return badReply("an entry of unknown type %.40q", e.Type)
		}
		if e.Size < 0 {
			return badReply("a negative size for %q", p)
		}
		if e.Mode&^0o7777 != 0 {
			return badReply("mode %o for %q", e.Mode, p)
		}
	}
	return nil
}

// isGuestPath says whether p is a clean absolute path of a sane length, without NUL.
func isGuestPath(p string) bool {
	return len(p) <= maxGuestPath && path.IsAbs(p) && path.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// checkHello verifies the runner's first frame: the protocol's version, and fields that fit.
func checkHello(h *runnerproto.Hello) error {
	if h == nil || h.Version != runnerproto.Version {
		return errors.New("the runner in the guest speaks another protocol version")
	}
	if h.PID < 0 || h.UID < 0 || len(h.Home) > maxGuestPath || len(h.Shell) > maxGuestPath || len(h.LoginEnv) > 16 {
		return badReply("a hello of pid %d, uid %d, home of %d bytes", h.PID, h.UID, len(h.Home))
	}
	return nil
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
