package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"strings"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// Agent makes a connection act, in the guest, as an unprivileged user of its own under a
// network policy: the runner, the file tools' SFTP and every script run as that user, who has
// no sudo, so that the firewall rules and the proxy that root keeps for it (the runner's `net`
// commands, internal/netpolicy) bind the agent and it cannot lift them. The Lima user (who has
// passwordless sudo) only sets that up, at every connect, before anything of the agent's runs:
// a restarted VM gets its rules back before the first command.
type Agent struct {
	// User is the guest user (AgentUser of the session).
	User string
	// Policy is the network policy, as `--network` spells it (not "open").
	Policy string
	// Own is the staged copy: created by root when missing and handed to User.
	Own string
	// Carry are files, relative to the home directories, copied from the Lima user's home to
	// User's when User has none: the session's marker when a session comes under a policy.
	Carry []string
	// Live, when set, is the policy the session holds now (`limactl mcp network INSTANCE
	// allow|deny|set` changes it while the agent runs): every set-up (a reconnect, a VM
	// restart) puts that one in place instead of Policy, so that a live change is not undone.
	// Its answer is used only when it is a policy ("" or "open", a switch of identity that a
	// running connection cannot make, keeps Policy).
	Live func() string
	// Secrets, when set, are the session's secrets: `net ensure` gets their setup on its
	// standard input, and the connection's relay listens for the guest's proxy (relay.go).
	Secrets *AgentSecrets
	// Observe, when set, is a connection that only reads the session (`status`): only the
	// runner is started as the agent user (observeAgent), which is not set up (`net ensure`:
	// its rules, its proxy, its files, seconds each on an emulated guest); nothing is carried
	// or handed over, no relay listens, there is no SFTP. Its runner opens no socket, so the
	// rules need not be in place for it; a session whose agent user the guest does not have
	// (yet, or after a rebuild) is an error.
	Observe bool
	// Verified, when set with Observe, gives the root-owned runner that another connection of
	// this process checked ("" when it has none): a connection through the ControlMaster then
	// starts only that runner as the agent (dialObserving).
	Verified func(context.Context) string
}

// CurrentPolicy is the policy the agent is under now: Live's answer, else Policy; with the
// secrets' bound hosts on its allowlist.
func (a *Agent) CurrentPolicy() string {
	p := a.Policy
	if a.Live != nil {
		if live := a.Live(); live != "" && live != "open" && !strings.ContainsAny(live, "\n\x00") {
			p = live
		}
	}
	return a.withBoundHosts(p)
}

// withBoundHosts is the policy p with the secrets' bound hosts added to its allowlist: they
// join whichever policy the session is under (the one it was started with, or the one a live
// change or an earlier process left in its record), since the proxy hands them to the relay.
// A policy that does not parse is left to the runner, which refuses it with why.
func (a *Agent) withBoundHosts(p string) string {
	if a.Secrets == nil {
		return p
	}
	pol, err := netpolicy.Parse(p)
	if err != nil {
		return p
	}
	return pol.WithHosts(a.Secrets.Setup.BoundNames()).String()
}

// AgentSetup is what the guest reported when it set the agent up (`net ensure`'s line).
type AgentSetup = netpolicy.EnsureResult

// agentUserPattern is what an agent user's name must be: the guest's useradd takes it, a
// shell word needs no quoting, and it can be told from any user Lima or a distribution makes.
var agentUserPattern = regexp.MustCompile(`^lmcp-[a-z0-9]{1,24}$`)

// noSudoExit is the exit status of the setup scripts when the Lima user has no passwordless sudo.
const noSudoExit = "97"

// orNoSudo follows a script's first `sudo -n` command: only when it fails does a second sudo
// tell "no sudo at all" (exit noSudoExit) from that command's own failure (its status kept).
// Asking first cost every setup a sudo more: a PAM session, 0.3–0.5 s on an emulated guest.
const orNoSudo = ` || { rc=$?; sudo -n true 2>/dev/null || exit ` + noSudoExit + `; exit $rc; }`

// exitStatus is the exit status in err of a command run in the guest (-1 when there is none).
func exitStatus(err error) int {
	var ee *exec.ExitError
	var se *ssh.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case errors.As(err, &se):
		return se.ExitStatus()
	}
	return -1
}

// ErrPolicyNeedsSudo says that the guest user cannot set a network policy up.
var ErrPolicyNeedsSudo = errors.New("a network policy needs passwordless sudo for the instance's user in the guest (Lima's default), to set up a user for the agent, its firewall rules and its proxy")

func (a *Agent) check() error {
	if !agentUserPattern.MatchString(a.User) {
		return fmt.Errorf("agent user %q: not a name limactl-mcp makes", a.User)
	}
	if a.Policy == "" || a.Policy == "open" || strings.ContainsAny(a.Policy, "\n\x00") {
		return fmt.Errorf("agent user %s: network policy %q cannot be set up", a.User, a.Policy)
	}
	if a.Own != "" && (!path.IsAbs(a.Own) || path.Clean(a.Own) != a.Own || a.Own == "/") {
		return fmt.Errorf("agent user %s: the staged copy %q is not a clean absolute path", a.User, a.Own)
	}
	if a.Secrets != nil {
		if err := a.Secrets.Setup.Check(); err != nil {
			return fmt.Errorf("agent user %s: %w", a.User, err)
		}
		if a.Secrets.Serve == nil {
			return fmt.Errorf("agent user %s: secrets without a relay", a.User)
		}
	}
	for _, c := range a.Carry {
		if path.IsAbs(c) || path.Clean(c) != c || strings.HasPrefix(c, "..") {
			return fmt.Errorf("agent user %s: %q is not a path inside a home directory", a.User, c)
		}
	}
	return nil
}

// As wraps a shell command so that it runs as the agent's user, from its home directory,
// confined by runner (the verified root-owned runner: its `net as` gives the agent a mount
// namespace without the local daemons' sockets, no_new_privs, no groups). Without a runner it
// runs nothing: the agent never starts unconfined.
func (a *Agent) As(runner, cmd string) string {
	if runner == "" {
		return "echo 'limactl-mcp: no verified runner to confine the agent user with' >&2; exit 126"
	}
	return "exec sudo -n " + shellquote.Quote(runner) + " net as --user " + a.User + " -- sh -c " + shellquote.Quote("cd && "+cmd)
}

// setupScript sets the agent up under policy, CurrentPolicy's (as the Lima user, with sudo),
// and prints what `net ensure` reported: a line of JSON. Every file operation on the agent's
// home, the copy and their parents is `net ensure`'s (--own: made when missing, and handed
// over, by directory descriptors with no symbolic link followed); the files carried into the
// agent's home are written as the agent (through `net as`), never by root or the Lima user.
func (a *Agent) setupScript(exe, policy string) string {
	q := shellquote.Quote
	var b strings.Builder
	b.WriteString("set -e\nexe=" + q(exe) + "\n")
	ensure := `sudo -n "$exe" net ensure --user ` + a.User + ` --policy ` + q(policy)
	if a.Own != "" {
		ensure += " --own " + q(a.Own)
	}
	if a.Secrets != nil {
		ensure += " --secrets-stdin" // the setup comes on the script's standard input
	}
	b.WriteString("out=$(" + ensure + ")" + orNoSudo + "\nprintf '%s\\n' \"$out\"\n")
	if len(a.Carry) > 0 {
		b.WriteString(`ah=$(getent passwd ` + a.User + ` | cut -d: -f6)` + "\n")
		asAgent := `sudo -n "$exe" net as --user ` + a.User + ` --`
		for _, c := range a.Carry {
			// Read as the Lima user (no privilege: a symlink the agent planted there while it was
			// that user leads nowhere it could not read anyway), written as the agent.
			b.WriteString(`if [ -f "$HOME"/` + q(c) + ` ] && ! ` + asAgent + ` test -e "$ah"/` + q(c) + `; then head -c 4096 "$HOME"/` + q(c) +
				` | ` + asAgent + ` sh -c 'mkdir -p "$(dirname "$1")" && cat > "$1"' sh "$ah"/` + q(c) + `; fi` + "\n")
		}
	}
	return b.String()
}

// parseSetup reads the line `net ensure` printed (guest output: checked, not trusted).
func (a *Agent) parseSetup(out string) (*AgentSetup, error) {
	line := strings.TrimSpace(out)
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	var s AgentSetup
	if len(line) > 4096 || json.Unmarshal([]byte(line), &s) != nil {
		return nil, fmt.Errorf("setting up the agent user %s: unexpected answer %q", a.User, sshlink.Truncate(line, 200))
	}
	if s.User != a.User || s.UID <= 0 || !path.IsAbs(s.Home) || path.Clean(s.Home) != s.Home || s.Home == "/" || strings.ContainsAny(s.Home+s.EnvFile+s.Log, "\n\x00") ||
		(s.EnvFile != "" && !path.IsAbs(s.EnvFile)) || (s.Log != "" && !path.IsAbs(s.Log)) {
		return nil, fmt.Errorf("setting up the agent user %s: unexpected answer %q", a.User, sshlink.Truncate(line, 200))
	}
	return &s, nil
}

// maxSetupAttempts bounds the set-ups of one connect that a live change of the policy repeats.
const maxSetupAttempts = 3

// setUpUnderCurrentPolicy runs setUp under the policy the agent is under now (CurrentPolicy),
// again while that changed during the run, at most maxSetupAttempts times; it returns the last
// run's output and policy. A live change (`limactl mcp network`) is recorded before it is
// applied, so one recorded while a set-up ran, and perhaps put in place before the set-up's
// older policy (which would undo it, a narrowing too), is put in place again after it.
func (a *Agent) setUpUnderCurrentPolicy(setUp func(policy string) (string, error)) (out, policy string, err error) {
	for attempt := 1; ; attempt++ {
		policy = a.CurrentPolicy()
		out, err = setUp(policy)
		if err != nil || a.CurrentPolicy() == policy || attempt == maxSetupAttempts {
			return out, policy, err
		}
	}
}

// runSetup runs an agent's set-up script as the Lima user, the secrets' set-up (the bound
// hosts, the CA and the placeholders) on its standard input (never on a command line, though
// none of them is a value).
func (l *link) runSetup(ctx context.Context, script string) (string, error) {
	a := l.agent
	if a.Secrets == nil {
		return l.t.Output(ctx, "sh -c "+shellquote.Quote(script))
	}
	in, _ := json.Marshal(l.withRelayPort(a.Secrets.Setup))
	b, err := l.t.Stream(ctx, "sh -c "+shellquote.Quote(script), bytes.NewReader(in))
	return string(b), err
}

// becomeAgent sets the agent up with the verified runner exe and moves l's SFTP to the agent's
// user; the runner is then started as that user (runnerCommand).
func (l *link) becomeAgent(ctx context.Context, exe string) error {
	a := l.agent
	if a.Secrets != nil {
		if err := l.listenRelayPort(); err != nil {
			return err
		}
	}
	out, policy, err := a.setUpUnderCurrentPolicy(func(policy string) (string, error) {
		return l.runSetup(ctx, a.setupScript(exe, policy))
	})
	if err != nil {
		if exitStatus(err) == 97 {
			return ErrPolicyNeedsSudo
		}
		return fmt.Errorf("setting up network policy %s for the agent user %s in the guest: %w", policy, a.User, err)
	}
	setup, err := a.parseSetup(out)
	if err != nil {
		return err
	}
	setup.Runner = exe
	sc, p, err := l.agentSFTP(ctx, exe)
	if err != nil {
		return fmt.Errorf("sftp as the agent user %s: %w", a.User, err)
	}
	// The Lima user's SFTP goes: from now on the link is the agent's.
	old := l.sftp
	l.sftp, l.sftpDone, l.setup, l.home = sc, p.Done, setup, setup.Home
	l.closers = append(l.closers, p.Stop)
	if old != nil {
		_ = old.Close()
	}
	if a.Secrets != nil {
		if err := l.startRelay(a, l.log); err != nil {
			return fmt.Errorf("the secrets relay of %s: %w", a.User, err)
		}
	}
	return nil
}

// sftpServers are where distributions keep sftp-server (Debian and Ubuntu, Fedora, Arch and
// Alpine, others): run as the agent's user, it is started as a command, not as sshd's
// subsystem (which runs as the Lima user).
var sftpServers = []string{"/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server", "/usr/lib/ssh/sftp-server", "/usr/libexec/sftp-server"}

func (l *link) agentSFTP(ctx context.Context, runner string) (*sftp.Client, *sshlink.Pipes, error) {
	var find strings.Builder
	for _, p := range sftpServers {
		find.WriteString("[ -x " + p + " ] && exec " + p + "; ")
	}
	find.WriteString("echo 'no sftp-server in the guest' >&2; exit 127")
	stderr := headtail.New(2048, 2048)
	p, err := l.t.Pipe(l.agent.As(runner, find.String()), stderr)
	if err != nil {
		return nil, nil, err
	}
	abort := context.AfterFunc(ctx, p.Stop)
	defer abort()
	sc, err := sftp.NewClientPipe(p.Stdout, p.Stdin, sftp.UseConcurrentWrites(true), sftp.UseConcurrentReads(true))
	if err != nil {
		p.Stop()
		o := stderr.Output()
		return nil, nil, fmt.Errorf("%w (%s)", err, strings.TrimSpace(string(o.Head)+string(o.Tail)))
	}
	return sc, p, nil
}

// ReleaseAgent ends the network policy of an agent user (a session going back to "open"): as
// the Lima user, with sudo, it removes the user's firewall rules and policy and ends its
// processes (the runner's `net remove`), hands the staged copy own back to the Lima user, and
// carries the files carry (relative to the homes) back from the agent's home. The connection
// must be the Lima user's (no Options.Agent).
func (c *Conn) ReleaseAgent(ctx context.Context, user, own string, carry []string) error {
	a := &Agent{User: user, Policy: "release", Own: own, Carry: carry}
	if err := a.check(); err != nil {
		return err
	}
	if c.opts.Agent != nil {
		return errors.New("releasing an agent user takes the Lima user's connection")
	}
	l, err := c.get(ctx)
	if err != nil {
		return err
	}
	if l.systemRunner == "" {
		return ErrPolicyNeedsSudo
	}
	q := shellquote.Quote
	var b strings.Builder
	b.WriteString("set -e\nexe=" + q(l.systemRunner) + "\n")
	b.WriteString("ah=$(getent passwd " + user + " | cut -d: -f6) || ah=\n")
	// `net release` ends the agent's processes, rules and policy, then hands the copy back
	// walking by directory descriptors with no symbolic link followed (the agent may own the
	// copy's parents: a named session's copy is in its home).
	rel := `sudo -n "$exe" net release --user ` + user
	if own != "" {
		rel += " --own " + q(own)
	}
	b.WriteString(rel + " >/dev/null" + orNoSudo + "\n")
	asAgent := `sudo -n "$exe" net as --user ` + user + ` --`
	for _, f := range carry {
		b.WriteString(`if [ -n "$ah" ] && ` + asAgent + ` test -f "$ah"/` + q(f) + `; then mkdir -p "$(dirname "$HOME"/` + q(f) + `)"; rm -f "$HOME"/` + q(f) +
			`; ` + asAgent + ` head -c 4096 "$ah"/` + q(f) + ` > "$HOME"/` + q(f) + "; fi\n")
	}
	if _, err := c.output(ctx, l, "sh -c "+q(b.String())); err != nil {
		if exitStatus(err) == 97 {
			return ErrPolicyNeedsSudo
		}
		return fmt.Errorf("ending the network policy of the agent user %s in the guest: %w", user, err)
	}
	return nil
}

// Setup is what the guest reported when the connection's agent was set up (connecting if
// needed); nil without Options.Agent.
func (c *Conn) Setup(ctx context.Context) (*AgentSetup, error) {
	if c.opts.Agent == nil {
		return nil, nil
	}
	l, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	return l.setup, nil
}

// Agent is the connection's Options.Agent (nil without).
func (c *Conn) Agent() *Agent { return c.opts.Agent }
