package staging

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// What `limactl mcp shell` asks of the guest copy in sh, so that a command starts within one
// ssh session, without the runner, SFTP or a scan: is the copy this session's (its marker,
// see guestCopyPresent), and did anything in it change while the command ran.
//
// Everything this sh prints after the command started is the command's to forge (it runs as
// the same user, reads the script from /proc/…/cmdline, prints on the same stderr, can remove
// the marker): so "changed" is only ever believed, and "unchanged" is decided by the runner's
// scan (Session.Unchanged); and whether the command ran is the first line the script prints,
// before the command starts (Ran), which nothing the command prints can come before.

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
// (closeRoom: the copy and the stores 0700, for a copy an older version left open). With a
// prefix (see Probe.InBand), it then prints prefix+"ran" on stderr: the command starts after
// that line.
func (s *Session) CheckCopyScript(prefix string) string {
	gp := shellquote.Quote(s.State.GuestPath)
	sh := s.markerScript() +
		"if [ -z \"$ok\" ] || [ ! -d " + gp + " ]; then echo 'limactl-mcp: the staged copy is not in the guest' >&2; exit " + fmt.Sprint(CopyGoneStatus) + "; fi\n" +
		// Only what is open (a chmod, even to the same mode, is a change the probe would see);
		// -type d: a link is not followed.
		"find " + gp + " \"$HOME\"/" + storeRel + " -prune -type d \\( -perm -040 -o -perm -020 -o -perm -010 -o -perm -004 -o -perm -002 -o -perm -001 \\) -exec chmod go= {} + 2>/dev/null || :\n"
	if prefix != "" {
		sh += "echo " + shellquote.Quote(prefix+ranLine) + " >&2\n"
	}
	return sh
}

// ranLine is the probe's line that says the command was started.
const ranLine = "ran"

// ProbeResult is what a Probe found.
type ProbeResult struct {
	// CopyPresent: the guest holds this session's copy.
	CopyPresent bool
	// Changed: something in the copy (outside .git) changed since the probe's start; also
	// true when the guest could not tell. False is only a claim (the command can print it):
	// Session.Unchanged decides.
	Changed bool
	// Ran: the copy was there and the command was started (the first line of the probe,
	// printed before the command runs).
	Ran bool
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
	for i, line := range lines {
		if i == 0 && strings.TrimSpace(line) == ranLine {
			r.Ran = true
		}
		switch strings.TrimSpace(line) {
		case "copy=1":
			r.CopyPresent = true
		case "changed=0":
			r.Changed = false
		}
	}
	return r
}

// Unchanged says whether the guest copy holds no pending change at all, by the runner's own
// scan (what the review would list): what decides that a command changed nothing, since
// anything the command's session prints can be the command's. An error counts as changed (the
// review then says what is wrong).
func (s *Session) Unchanged(ctx context.Context) bool {
	cs, err := s.GuestChanges(ctx)
	return err == nil && len(cs.Changes) == 0 && len(cs.GitMetadata) == 0
}

// CopyPresent says whether the guest holds this session's copy (its marker and directory),
// asked through the host's own connection, before a command runs.
func (s *Session) CopyPresent(ctx context.Context) (bool, error) {
	return s.guestCopyPresent(ctx)
}
