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
// otherwise says so on stderr and exits with CopyGoneStatus. It closes the session's room
// (closeRoom: the copy and the stores 0700, for a copy an older version left open).
func (s *Session) CheckCopyScript() string {
	gp := shellquote.Quote(s.State.GuestPath)
	return s.markerScript() +
		"if [ -z \"$ok\" ] || [ ! -d " + gp + " ]; then echo 'limactl-mcp: the staged copy is not in the guest' >&2; exit " + fmt.Sprint(CopyGoneStatus) + "; fi\n" +
		// Only what is open (a chmod, even to the same mode, is a change the probe would see);
		// -type d: a link is not followed.
		"find " + gp + " \"$HOME\"/" + storeRel + " -prune -type d \\( -perm -040 -o -perm -020 -o -perm -010 -o -perm -004 -o -perm -002 -o -perm -001 \\) -exec chmod go= {} + 2>/dev/null || :\n"
}

// ProbeResult is what a Probe found.
type ProbeResult struct {
	// CopyPresent: the guest holds this session's copy.
	CopyPresent bool
	// Changed: something in the copy (outside .git) changed since the probe's start; also
	// true when the guest could not tell.
	Changed bool
}

// Probe finds out, without a scan and with no process but find, whether anything in the guest
// copy changed while a command ran: the copy's change times (content, mode, links, the entries
// of a directory; .git aside) within a window that covers the run, plus two seconds for the
// coarse ticks of file times (a change made in those seconds before the command counts too: it
// only makes the review look). Without GNU find, it says "changed".
type Probe struct{ s *Session }

// NewProbe returns the probe of the session's copy.
func (s *Session) NewProbe() *Probe { return &Probe{s: s} }

// Start is sh that notes when the script started, for InBand: bash's SECONDS counts from the
// shell's start; another shell asks date.
func (p *Probe) Start() string {
	return "t0=; [ -n \"${SECONDS-}\" ] || t0=$(date +%s 2>/dev/null)\n"
}

// InBand is sh, run after the command in the script that began with Start, that prints on
// stderr, each line after prefix, whether the guest holds the session's copy (copy=1) and
// whether anything in it changed since the script started (changed=0|1).
func (p *Probe) InBand(prefix string) string {
	return "if [ -n \"$t0\" ]; then w=$(( $(date +%s) - t0 + 2 )); else w=$(( SECONDS + 2 )); fi\n" +
		"f=$(( w % 60 * 1000 / 60 )); case $f in ?) f=00$f ;; ??) f=0$f ;; esac; w=$(( w / 60 )).$f\n" +
		p.script(prefix, " >&2")
}

// After is sh, run in a session of its own after the command, that prints on stdout whether
// the guest holds the session's copy (copy=1) and whether anything in it changed in the last
// `within` (changed=0|1).
func (p *Probe) After(within time.Duration) string {
	return fmt.Sprintf("w=%.4f\n", (within+2*time.Second).Minutes()) + p.script("", "")
}

func (p *Probe) script(prefix, redir string) string {
	pre := shellquote.Quote(prefix)
	gp := shellquote.Quote(p.s.State.GuestPath)
	return p.s.markerScript() +
		"echo " + pre + "copy=$ok" + redir + "\n" +
		"if r=$(find " + gp + " -path " + shellquote.Quote(p.s.State.GuestPath+"/.git") + " -prune -o -cmin \"-$w\" -print -quit 2>/dev/null); then\n" +
		"  if [ -n \"$r\" ]; then echo " + pre + "changed=1" + redir + "; else echo " + pre + "changed=0" + redir + "; fi\n" +
		"else echo " + pre + "changed=1" + redir + "; fi\n"
}

// ParseProbe reads the lines of InBand (without their prefix) or After. What it cannot read counts as
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
