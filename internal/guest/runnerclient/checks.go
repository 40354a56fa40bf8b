package runnerclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Every reply of the runner is hostile input: the agent can replace the runner's file, or
// anything the runner reads. Each method checks its reply (its post-condition, beside it)
// before anyone uses it; what they share is here.

// ErrBadReply wraps every malformed reply.
var ErrBadReply = errors.New("the guest runner sent a malformed reply (it may have been replaced in the guest; the next call starts it again)")

func badReply(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadReply, fmt.Sprintf(format, args...))
}

// Caps on the free text of a reply: an error's message, a command's start error, a search's.
const (
	maxErrorText = 64 << 10
	maxText      = 4096
	maxGuestPath = 16 << 10
)

// checkErrorReply: an error reply is just that, with a message of a sane length.
func checkErrorReply(resp *runnerproto.Response) error {
	if len(resp.Error) > maxErrorText {
		return badReply("an error message of %d bytes", len(resp.Error))
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

// asSent is s as the runner received it: JSON makes invalid UTF-8 into U+FFFD.
func asSent(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &s)
	return s
}

// isRelName says whether n is a clean relative path.
func isRelName(n tree.Name) bool {
	p := string(n)
	return p != "" && len(p) <= maxGuestPath && !strings.HasPrefix(p, "/") && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../") && !strings.ContainsRune(p, 0)
}

// isCkptID says whether id is a checkpoint id: a decimal number of at most 9 digits, not 0.
func isCkptID(id string) bool {
	if id == "" || len(id) > 9 || id[0] == '0' {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
