package guest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// CopyBetweenAgents copies the tree src, which agent user from owns, into dst, which agent
// user to owns or may make (set up already: `net ensure --own` made its copy and handed it
// over): a fork of a session under a network policy, its copy and its checkpoint store. It is a tar of src made as from, piped into a tar that
// extracts as to, each confined by the verified root-owned runner (`net as`, as every command
// of an agent runs). Neither end runs as root or as the Lima user, who only joins the pipe: a
// tree from's agent shaped (links, names, modes, a stream it forged by replacing tar) can reach
// only what to may write, a user made for the new session an instant before. Modes and times
// are kept (to the nanosecond: a pax archive), the owner is to's; what from cannot read stops
// the copy with an error. A file its agent changes while it is read is copied as tar read it
// (tar's exit 1), as cp does for a fork of an open session. The connection must be the Lima
// user's (no Options.Agent).
func (c *Conn) CopyBetweenAgents(ctx context.Context, from, src, to, dst string) error {
	for _, u := range []string{from, to} {
		if !agentUserPattern.MatchString(u) {
			return fmt.Errorf("agent user %q: not a name limactl-mcp makes", u)
		}
	}
	if from == to {
		return fmt.Errorf("copying between agent users: %s to itself", from)
	}
	for _, p := range []string{src, dst} {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" || strings.ContainsAny(p, "\n\x00") {
			return fmt.Errorf("copying between agent users: %q is not a clean absolute path", p)
		}
	}
	if c.opts.Agent != nil {
		return errors.New("copying between agent users takes the Lima user's connection")
	}
	l, err := c.get(ctx)
	if err != nil {
		return err
	}
	if l.systemRunner == "" {
		return ErrPolicyNeedsSudo
	}
	_, err = c.output(ctx, l, "sh -c "+shellquote.Quote(copyBetweenAgentsScript(l.systemRunner, from, src, to, dst)))
	switch exitStatus(err) {
	case -1, 0:
	case 97:
		return ErrPolicyNeedsSudo
	case 3:
		return fmt.Errorf("reading %s as the agent user %s: %w; an entry its agent made unreadable to itself stops the copy: make it readable in that session (`chmod -R u+rwX .` in a command of its agent) and try again", src, from, err)
	case 4:
		return fmt.Errorf("writing %s as the agent user %s: %w", dst, to, err)
	}
	if err != nil {
		return fmt.Errorf("copying %s to %s in the guest: %w", src, dst, err)
	}
	return nil
}

// copyBetweenAgentsScript is CopyBetweenAgents' script, run by the Lima user's sh (POSIX: no
// pipefail, so the reading end's status goes through a file of the Lima user's). Exit 3: the
// reading end failed; 4: the writing end; 97: no sudo.
func copyBetweenAgentsScript(exe, from, src, to, dst string) string {
	q := shellquote.Quote
	as := func(user, cmd, dir string) string {
		return `sudo -n "$exe" net as --user ` + user + ` -- sh -c ` + q(`cd / && `+cmd) + ` sh ` + q(dir)
	}
	// Each tar gets the path as $1 and enters it as its own user: a link on the way is
	// followed with that user's rights only.
	read := as(from, `cd "$1" && exec tar --format=posix --numeric-owner -cf - .`, src)
	write := as(to, `mkdir -p "$1" && cd "$1" && exec tar -xpf - --no-same-owner`, dst)
	return `exe=` + q(exe) + `
st=$(mktemp) || exit 1
trap 'rm -f "$st"' EXIT
{ ` + read + `; echo $? > "$st"; } | ` + write + `
w=$?
r=$(cat "$st")
# tar -c exits 1 when a file changed while it was read: copied as read. A reading end that
# failed otherwise leaves the writing end a stream that is not an archive, which it refuses.
case $r in 0|1) [ "$w" -eq 0 ] && exit 0 ;; esac
sudo -n true 2>/dev/null || exit ` + noSudoExit + `
case $r in 0|1) exit 4 ;; esac
# A reading end cut off (SIGPIPE) by a writing end that failed first: the writer's failure.
[ "$w" -ne 0 ] && [ "$r" -gt 128 ] && exit 4
exit 3
`
}
