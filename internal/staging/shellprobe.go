package staging

import (
	"fmt"
	"strings"
	"time"

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

// ProbeResult is what ProbeScript found.
type ProbeResult struct {
	// CopyPresent: the guest holds this session's copy.
	CopyPresent bool
	// Changed: something in the copy (outside .git) changed in the time asked about; also
	// true when the guest could not tell (a find without -newerct).
	Changed bool
}

// ProbeScript is sh that says whether the guest holds this session's copy and whether
// anything in it, outside .git, changed (its ctime: content, mode, links, entries of a
// directory) in the last `within` of the guest's clock. It forks only find. ParseProbe reads
// its output.
func (s *Session) ProbeScript(within time.Duration) string {
	return s.markerScript() +
		"echo copy=$ok\n" +
		"cd " + shellquote.Quote(s.State.GuestPath) + " 2>/dev/null || exit 0\n" +
		fmt.Sprintf("if r=$(find . -path ./.git -prune -o -cmin -%.3f -print -quit 2>/dev/null); then\n", within.Minutes()+0.001) +
		"  if [ -n \"$r\" ]; then echo changed=1; else echo changed=0; fi\n" +
		"else echo changed=1; fi\n"
}

// ParseProbe reads the output of ProbeScript. What it cannot read counts as changed.
func ParseProbe(out string) ProbeResult {
	r := ProbeResult{Changed: true}
	for _, line := range strings.Split(out, "\n") {
		switch strings.TrimSpace(line) {
		case "copy=1":
			r.CopyPresent = true
		case "changed=0":
			r.Changed = false
		}
	}
	return r
}
