package enforce

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// The guest's half of a session's secrets (docs/secrets.md): the values stay on the host, in
// the relay of the limactl-mcp process that holds the session. Root makes the session's relay
// directory, Layout.Secrets/USER, the Lima user's and 0700 (no agent can enter it), where that
// process asks sshd, on its own connection, to listen (a streamlocal forward); root installs
// the session CA in the system's trust store; the agent's environment file gets the CA
// variables and the placeholders; and the proxy hands a CONNECT of that agent to a bound
// host:port to the relay's socket (proxy.go, secrets_linux.go) instead of the host itself.

// checkSecrets checks the secrets part of a policy file: bound hosts only under allow, each
// on the allowlist, with the uid of the Lima user who listens for the relay.
func (u UserPolicy) checkSecrets(p netpolicy.Policy) error {
	if len(u.SecretHosts) == 0 && len(u.RuleTargets) == 0 {
		if u.RelayUID != 0 || len(u.Relays) != 0 {
			return fmt.Errorf("user %s: a relay uid without bound hosts", u.User)
		}
		return nil
	}
	if p.Mode() != netpolicy.ModeAllow {
		return fmt.Errorf("user %s: secrets are bound under network %s: only allow: carries them", u.User, p)
	}
	if u.RelayUID <= 0 {
		return fmt.Errorf("user %s: bound hosts without the uid of the Lima user who holds the relay", u.User)
	}
	if err := u.checkRelays(); err != nil {
		return err
	}
	for _, hp := range u.SecretHosts {
		host, _, err := netpolicy.SplitBoundHost(hp)
		if err != nil {
			return fmt.Errorf("user %s: %w", u.User, err)
		}
		if !p.Allows(host) {
			return fmt.Errorf("user %s: bound host %s is not on the allowlist", u.User, host)
		}
	}
	for _, hp := range u.RuleTargets {
		// Whether rules name it is the proxy's to check at each CONNECT (a live change may
		// drop them): a target without rules is never handed to the relay.
		if _, _, err := netpolicy.SplitBoundHost(hp); err != nil {
			return fmt.Errorf("user %s: rule target: %w", u.User, err)
		}
	}
	return nil
}

// checkSecretsPolicy refuses secrets under a policy that cannot carry them, with the fix.
func checkSecretsPolicy(p netpolicy.Policy, s *netpolicy.SecretsSetup) error {
	if s == nil {
		return nil
	}
	switch p.Mode() {
	case netpolicy.ModeNone:
		return errors.New("secrets cannot be used under network none (no host may be reached, the bound ones included): use --network allow:HOST,... (the bound hosts are added to it)")
	case netpolicy.ModeOpen:
		return errors.New("secrets are not carried under network open yet: use --network allow:HOST,... (the bound hosts are added to it)")
	}
	for _, hp := range s.Hosts {
		host, _, err := netpolicy.SplitBoundHost(hp)
		if err != nil {
			return err
		}
		if !p.Allows(host) {
			return fmt.Errorf("bound host %s is not on the allowlist of network %s: add it (limactl-mcp adds the bound hosts itself)", host, p)
		}
	}
	return nil
}

// secretsDir is the relay directory of user in l.
func (l Layout) secretsDir(user string) string { return filepath.Join(l.Secrets, user) }

// caFile is where user's session CA is installed for the system's trust store.
func (l Layout) caFile(user string) string {
	return filepath.Join(l.TrustDir, "limactl-mcp-"+user+".crt")
}

// secretsEnv is what the agent's environment gets for s: the CA variables (netpolicy.CAEnv:
// Node's gets the CA alone, the others the system bundle that now holds it) and the
// placeholders.
func secretsEnv(l Layout, user string, s *netpolicy.SecretsSetup) string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for _, kv := range netpolicy.CAEnv(l.caFile(user), l.TrustBundle) {
		b.WriteString(kv + "\n")
	}
	for _, kv := range s.Env {
		b.WriteString(kv + "\n")
	}
	return b.String()
}

// ensureSecrets makes user's relay directory (relayUID's, 0700; a socket of s's relay left
// there by an earlier connection is removed, so that the next forward can bind) and installs
// its CA (the session's: the same key for all its processes, secrets.OpenCA).
func ensureSecrets(ctx context.Context, l Layout, user string, relayUID, relayGID int, s *netpolicy.SecretsSetup) error {
	if relayUID <= 0 {
		return errors.New("secrets need the Lima user who runs sudo (SUDO_UID): run net ensure through sudo as that user")
	}
	if err := ensureRootDir(l.Secrets); err != nil {
		return fmt.Errorf("making %s: %w", l.Secrets, err)
	}
	dir := l.secretsDir(user)
	// The parent is root's and only root's: a path-based mkdir there is safe.
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := os.Lchown(dir, relayUID, relayGID); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, netpolicy.RelaySocketName(s.Relay))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the old relay socket: %w", err)
	}
	if err := ensureRootDir(l.TrustDir); err != nil {
		return fmt.Errorf("making %s: %w", l.TrustDir, err)
	}
	old, _ := readOwnFile(l.caFile(user), maxCAFile) // the CA it replaces, if any
	changed, err := writeFileIfChanged(l.caFile(user), []byte(s.CAPEM), 0o644)
	if err != nil {
		return fmt.Errorf("installing the session CA: %w", err)
	}
	if changed {
		return updateTrust(ctx, l, old)
	}
	return nil
}

// dropSecrets removes user's relay directory and CA (a session ending, or no longer holding
// secrets).
func dropSecrets(ctx context.Context, l Layout, user string) error {
	if l.Secrets != "" {
		// RemoveAll unlinks and never follows a link; the parent is root's.
		if err := os.RemoveAll(l.secretsDir(user)); err != nil {
			return fmt.Errorf("removing %s: %w", l.secretsDir(user), err)
		}
	}
	if l.TrustDir == "" {
		return nil
	}
	old, _ := readOwnFile(l.caFile(user), maxCAFile)
	err := os.Remove(l.caFile(user))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("removing the session CA: %w", err)
	}
	return updateTrust(ctx, l, old)
}

// updateTrust rebuilds the system's bundle with its TrustTool (layout.go: trustStore).
// On Debian's layout, syncBundle does the tool's work for the session CAs (trustbundle.go);
// gone is the CA just removed or replaced, as it was.
func updateTrust(ctx context.Context, l Layout, gone []byte) error {
	if !l.UpdateTrust {
		return nil
	}
	if len(l.TrustTool) == 0 {
		return errors.New("no tool to rebuild the guest's CA bundle")
	}
	tool, err := findTool(l.TrustTool[0])
	if err != nil {
		return fmt.Errorf("%s is not installed in the guest, so it cannot trust the session CA (install ca-certificates: Debian, Ubuntu, Alpine and Fedora images have it)", filepath.Base(l.TrustTool[0]))
	}
	if filepath.Base(l.TrustTool[0]) == "update-ca-certificates" {
		err := syncBundle(ctx, l, gone)
		if !errors.Is(err, errNotPlainBundle) {
			return err
		}
	}
	if out, err := exec.CommandContext(ctx, tool, l.TrustTool[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", filepath.Base(l.TrustTool[0]), err, truncate(strings.TrimSpace(string(out)), 300))
	}
	return nil
}

// ruleTarget is the relay's line for a CONNECT to host:port that user's relay terminates for
// its method and path rules (netpolicy.RuleTargets): the target and the rules the policy has
// for it now (a live change included); the caller adds the command when the relay reads it.
// ok is false when the relay does not terminate it, or when a plain entry allows the
// host:port (a tunnel then) or no rule names it.
func ruleTarget(user UserPolicy, policy netpolicy.Policy, host string, port int) (line netpolicy.RelayLine, ok bool) {
	if len(user.RuleTargets) == 0 || policy.AllowsPort(host, port) {
		return line, false
	}
	target := fmt.Sprintf("%s:%d", strings.TrimSuffix(strings.ToLower(host), "."), port)
	rules := policy.RulesFor(host, port)
	if !slices.Contains(user.RuleTargets, target) || len(rules) == 0 {
		return line, false
	}
	return netpolicy.RelayLine{Target: target, Rules: rules}, true
}

// boundTarget says whether host:port is one of user's bound hosts (a trailing dot and case
// ignored), and returns it in the bound form.
func boundTarget(user UserPolicy, host string, port int) (string, bool) {
	if len(user.SecretHosts) == 0 {
		return "", false
	}
	target := fmt.Sprintf("%s:%d", strings.TrimSuffix(strings.ToLower(host), "."), port)
	return target, slices.Contains(user.SecretHosts, target)
}
