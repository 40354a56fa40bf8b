package enforce

import (
	"io"
	"os"
	"strings"
	"syscall"
)

// keptFromSetup is what a set-up or a live change of a session's policy keeps of the
// secrets earlier set-ups gave: the policy file (its relays, their bound hosts, their owner),
// and the environment lines that are not the proxy's (the CA variables and the placeholders).
type keptFromSetup struct {
	up  UserPolicy
	env string
}

// keptSecrets reads what the user's set-ups left in root's files (its policy file and
// environment file, root's, read without following a link and capped). ok is false when the
// session has no secrets (nothing to keep).
func keptSecrets(l Layout, user string) (keptFromSetup, bool) {
	up, held, err := readPolicyFile(l.policyFile(user))
	if err != nil || len(up.SecretHosts)+len(up.RuleTargets) == 0 || up.RelayUID <= 0 {
		return keptFromSetup{}, false
	}
	k := keptFromSetup{up: up}
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

// mergeEnv is the NAME=VALUE lines of first, then those of more whose name first does not
// set (the placeholders and CA variables of the relays kept beside a new one).
func mergeEnv(first, more string) string {
	set := map[string]bool{}
	for _, line := range strings.Split(first, "\n") {
		if name, _, ok := strings.Cut(line, "="); ok {
			set[name] = true
		}
	}
	var b strings.Builder
	b.WriteString(first)
	for _, line := range strings.Split(more, "\n") {
		if name, _, ok := strings.Cut(line, "="); ok && !set[name] {
			set[name] = true
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
