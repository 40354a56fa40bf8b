package enforce

import (
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// keptFromSetup is what a live change of a session's policy keeps of the secrets its set-up
// gave: the bound hosts (hosts: their names, for the allowlist), the relay's owner, and the
// environment lines that are not the proxy's (the CA variables and the placeholders).
type keptFromSetup struct {
	hosts       []string
	secretHosts []string
	ruleTargets []string
	relayUID    int
	// relayCommands: the relay reads the command behind a connection (UserPolicy.RelayCommands).
	relayCommands bool
	env           string
}

// keptSecrets reads what the user's set-up left in root's files (its policy file and
// environment file, root's, read without following a link and capped). ok is false when the
// session has no secrets (nothing to keep).
func keptSecrets(l Layout, user string) (keptFromSetup, bool) {
	up, held, err := readPolicyFile(l.policyFile(user))
	if err != nil || len(up.SecretHosts)+len(up.RuleTargets) == 0 || up.RelayUID <= 0 {
		return keptFromSetup{}, false
	}
	k := keptFromSetup{secretHosts: up.SecretHosts, ruleTargets: up.RuleTargets, relayUID: up.RelayUID, relayCommands: up.RelayCommands}
	for _, hp := range up.SecretHosts {
		if h, _, err := netpolicy.SplitBoundHost(hp); err == nil {
			k.hosts = append(k.hosts, h)
		}
	}
	f, err := os.OpenFile(l.envFile(user), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return k, true
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || checkRootOwned(l.envFile(user), st) != nil {
		return k, true
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return k, true
	}
	proxy := map[string]bool{}
	for _, line := range strings.Split(ProxyEnv(held, l.ProxyAddr()), "\n") {
		proxy[line] = true
	}
	var b strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && !proxy[line] {
			b.WriteString(line + "\n")
		}
	}
	k.env = b.String()
	return k, true
}
