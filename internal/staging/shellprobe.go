package staging

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// What `limactl mcp shell` asks of the guest copy in sh, so that a command starts within one
// ssh session, without the runner, SFTP or a scan: is the copy this session's (its marker,
// see guestCopyPresent), and did anything in it change while the command ran.

// markerScript is sh that sets ok=1 when the guest holds this session's marker with its
// token; it reads only a regular file (the agent can make the marker a fifo).
func (s *Session) markerScript() string {
	m := `"$HOME"/` + shellquote.Quote(strings.TrimPrefix(s.markerPath(""), "/"))
	return "ok=; tok=; if [ -f " + m + " ] && [ ! -p " + m + " ]; then IFS= read -r tok < " + m + " || :; fi; " +
		"[ \"$tok\" = " + shellquote.Quote(s.State.Token) + " ] && ok=1\n"
}

// CopyGoneStatus is the exit status of CheckCopyScript when the guest copy is not this
// session's: the command did not run.
const CopyGoneStatus = 255

// CheckCopyScript is sh that goes on only when the guest holds this session's copy, and
// otherwise says so on stderr and exits with CopyGoneStatus.
func (s *Session) CheckCopyScript() string {
	return s.markerScript() +
		"if [ -z \"$ok\" ] || [ ! -d " + shellquote.Quote(s.State.GuestPath) + " ]; then echo 'limactl-mcp: the staged copy is not in the guest' >&2; exit " + fmt.Sprint(CopyGoneStatus) + "; fi\n"
}

// ProbeResult is what a Probe found.
type ProbeResult struct {
	// CopyPresent: the guest holds this session's copy.
	CopyPresent bool
	// Changed: something in the copy (outside .git) changed since the probe's start; also
	// true when the guest could not tell.
	Changed bool
}

// Probe finds out, without a scan, whether anything in the guest copy changed while a command
// ran: Start makes a stamp file (no process: a redirection), and Script compares the copy's
// ctimes (content, mode, links, the entries of a directory) with its time, less a second or
// two (GNU find and stat; elsewhere it says "changed"). The stamp's name is
// random, so that two shells on one session each have their own and the agent cannot
// guess it.
type Probe struct {
	s     *Session
	stamp string // relative to the guest user's home
}

// NewProbe returns a probe with a stamp of its own.
func (s *Session) NewProbe() *Probe {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Probe{s: s, stamp: strings.TrimPrefix(s.markerPath(""), "/") + ".shell-" + hex.EncodeToString(b)}
}

func (p *Probe) stampPath() string { return `"$HOME"/` + shellquote.Quote(p.stamp) }

// Start is sh that makes the stamp (after CheckCopyScript: the directory exists).
func (p *Probe) Start() string {
	return ": > " + p.stampPath() + " 2>/dev/null\n"
}

// Script is sh that prints, each line after prefix, whether the guest holds the session's
// copy (copy=1) and whether anything in it outside .git changed since Start (changed=0|1),
// and removes the stamp. Its output goes to stdout, or to stderr with toStderr. It runs only
// find (and rm).
func (p *Probe) Script(prefix string, toStderr bool) string {
	redir := ""
	if toStderr {
		redir = " >&2"
	}
	pre := shellquote.Quote(prefix)
	return p.s.markerScript() +
		"echo " + pre + "copy=$ok" + redir + "\n" +
		"st=" + p.stampPath() + "\n" +
		// A second before the stamp: file times tick coarsely (a jiffy), and a change made in
		// the stamp's tick must count. (A change made in that second before the command counts
		// too: it only makes the review look.)
		"if t=$(stat -c %Y \"$st\" 2>/dev/null) && r=$(cd " + shellquote.Quote(p.s.State.GuestPath) + " && find . -path ./.git -prune -o -newerct \"@$((t - 1))\" -print -quit 2>/dev/null); then\n" +
		"  if [ -n \"$r\" ]; then echo " + pre + "changed=1" + redir + "; else echo " + pre + "changed=0" + redir + "; fi\n" +
		"else echo " + pre + "changed=1" + redir + "; fi\n" +
		"rm -f \"$st\"\n"
}

// ParseProbe reads the lines of Script (without their prefix). What it cannot read counts as
// changed.
func ParseProbe(lines []string) ProbeResult {
	r := ProbeResult{Changed: true}
	for _, line := range lines {
		switch strings.TrimSpace(line) {
		case "copy=1":
			r.CopyPresent = true
		case "changed=0":
			r.Changed = false
		}
	}
	return r
}
