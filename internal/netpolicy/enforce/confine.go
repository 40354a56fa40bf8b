package enforce

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// The agent's processes (its runner, its SFTP server, its terminal's scripts) start through
// `net as` (RunAs), root's small entry in the runner: rather than `sudo -u AGENT`, which leaves
// the agent every unix socket of the guest, it gives the agent a mount namespace of its own
// with an empty /run, so that the daemons that would resolve names or relay traffic for it are
// out of reach by path: systemd-resolved (its varlink socket, which nss-resolve uses, and D-Bus),
// the D-Bus system bus, nscd, the Lima user's session bus and systemd instance (/run/user),
// docker and containerd, and any other daemon that keeps its socket in /run (or /var/run, a
// link to it). It sets no_new_privs (a setuid or file-capability binary gains nothing), drops
// every group, then the ids, and execs the command as the agent with its home, user and shell
// in the environment. Abstract unix sockets are not paths: a mount namespace does not hide
// them (docs/network.md says which there are).

// asEnvDrop are variables of sudo's environment that are not the agent's to see.
var asEnvDrop = []string{"SUDO_COMMAND=", "SUDO_USER=", "SUDO_UID=", "SUDO_GID=", "SUDO_HOME=", "MAIL=", "HOME=", "USER=", "LOGNAME=", "SHELL="}

// agentEnv is env with the agent's HOME, USER, LOGNAME and SHELL instead of sudo's.
func agentEnv(env []string, u agentUser) []string {
	out := make([]string, 0, len(env)+4)
next:
	for _, kv := range env {
		for _, p := range asEnvDrop {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	shell := u.Shell
	if shell == "" {
		shell = "/bin/sh"
	}
	return append(out, "HOME="+u.Home, "USER="+u.Name, "LOGNAME="+u.Name, "SHELL="+shell)
}

// checkAsUser finds user, which must be an agent user limactl-mcp made (its name, a uid and
// gid not 0, its home under the layout's).
func checkAsUser(l Layout, user string) (agentUser, error) {
	if os.Geteuid() != 0 {
		return agentUser{}, errors.New("net as must run as root (limactl-mcp runs it with sudo -n)")
	}
	if err := CheckUserName(user); err != nil {
		return agentUser{}, err
	}
	u, found, err := lookupUser("/etc/passwd", user)
	if err != nil {
		return agentUser{}, fmt.Errorf("looking up user %s: %w", user, err)
	}
	if !found {
		return agentUser{}, fmt.Errorf("user %s does not exist (net ensure makes it)", user)
	}
	if u.UID <= 0 || u.GID <= 0 || u.Home != l.home(user) {
		return agentUser{}, fmt.Errorf("user %s is not an agent user limactl-mcp made (uid %d, gid %d, home %s)", user, u.UID, u.GID, u.Home)
	}
	return u, nil
}
