package enforce

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// ErrNoAgentUser is Show's answer for an agent user the guest does not have (yet, or any
// more): a session whose server never set it up in this guest.
var ErrNoAgentUser = errors.New("no such agent user in the guest")

// Show is what Ensure answers for an agent user that is set up, without setting anything up:
// the user's uid and home (/etc/passwd), its policy as root's policy file holds it ("" when
// none), the log, the environment file when there is one, and the proxy's address. It changes
// nothing (no user, rule, file or proxy is made, not even its lock) and reads only root's
// files, never the agent's home: the connection of a command that only reads a session
// (`status`) starts the runner as the agent without Ensure's seconds of rules and proxy.
// Whether the rules hold is not its question: such a connection runs only the runner, which
// reads the session's copy and store and opens no socket.
func Show(l Layout, user string) (netpolicy.EnsureResult, error) {
	if os.Geteuid() != 0 {
		return netpolicy.EnsureResult{}, errors.New("net show must run as root (limactl-mcp runs it with sudo -n)")
	}
	return show(l, user, "/etc/passwd")
}

// show is Show with the users' database at passwd.
func show(l Layout, user, passwd string) (netpolicy.EnsureResult, error) {
	if err := CheckUserName(user); err != nil {
		return netpolicy.EnsureResult{}, err
	}
	u, found, err := lookupUser(passwd, user)
	switch {
	case err != nil:
		return netpolicy.EnsureResult{}, err
	case !found:
		return netpolicy.EnsureResult{}, fmt.Errorf("%w: %s", ErrNoAgentUser, user)
	}
	res := netpolicy.EnsureResult{User: user, UID: u.UID, Home: u.Home, Log: l.logFile(user), Proxy: l.ProxyAddr()}
	if up, p, err := readPolicyFile(l.policyFile(user)); err == nil {
		if up.UID != u.UID {
			// A user of that name made anew since its policy was written: not the session's.
			return netpolicy.EnsureResult{}, fmt.Errorf("agent user %s has uid %d, its policy file says %d: run the session's server (or `limactl mcp shell`) to set it up again", user, u.UID, up.UID)
		}
		res.Policy = p.String()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return netpolicy.EnsureResult{}, fmt.Errorf("reading the policy of %s: %w", user, err)
	}
	if st, err := os.Lstat(l.envFile(user)); err == nil && st.Mode().IsRegular() {
		res.EnvFile = l.envFile(user)
	}
	return res, nil
}
