package enforce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// EnsureOptions are the arguments of `net ensure`.
type EnsureOptions struct {
	User   string // lmcp-...
	Policy string // the spec
	Own    string // the staged copy to hand to the user, or ""
	// StagingUID is the guest user whose entries under Own are handed over (sudo's SUDO_UID).
	StagingUID int
	// StagingGID is the Lima user's group (sudo's SUDO_GID): the relay directory's.
	StagingGID int
	// Secrets are the session's bound hosts, CA and placeholders (nil: none; secrets.go).
	Secrets *netpolicy.SecretsSetup
	// Live: a change of a running session's policy (`net ensure --live`), which keeps the
	// secrets its set-up gave (keptSecrets) when Secrets is nil.
	Live   bool
	Layout Layout
}

// Ensure puts a user's policy in place: the user, its policy and environment files, the
// rules of every agent user, the staged copy's ownership, the proxy. Each step checks before
// it changes anything, so that a call with nothing to do (every connect of a session) is fast.
// Policy open removes the user's rules and files instead (the user itself is kept).
func Ensure(ctx context.Context, o EnsureOptions) (netpolicy.EnsureResult, error) {
	if os.Geteuid() != 0 {
		return netpolicy.EnsureResult{}, errors.New("net ensure must run as root (limactl-mcp runs it with sudo -n)")
	}
	if err := CheckUserName(o.User); err != nil {
		return netpolicy.EnsureResult{}, err
	}
	policy, err := netpolicy.Parse(o.Policy)
	if err != nil {
		return netpolicy.EnsureResult{}, err
	}
	l := o.Layout
	res := netpolicy.EnsureResult{User: o.User, UID: -1, Policy: policy.String(), Log: l.logFile(o.User)}
	if err := checkSecretsPolicy(policy, o.Secrets); err != nil {
		return netpolicy.EnsureResult{}, err
	}
	if !policy.Restricted() {
		if st, err := os.Lstat(l.ConfigDir); err == nil && st.IsDir() { // else no policy to drop
			unlock, err := lockUser(ctx, l.ConfigDir, o.User)
			if err != nil {
				return netpolicy.EnsureResult{}, err
			}
			defer unlock()
		}
		if err := dropUserPolicy(ctx, l, o.User); err != nil {
			return netpolicy.EnsureResult{}, err
		}
		if u, found, err := lookupUser("/etc/passwd", o.User); err == nil && found {
			res.UID, res.Home = u.UID, u.Home
		}
		return res, nil
	}
	for _, dir := range []string{l.ConfigDir, l.LogDir} {
		if err := ensureRootDir(dir); err != nil {
			return netpolicy.EnsureResult{}, fmt.Errorf("making %s: %w", dir, err)
		}
	}
	unlock, err := lockUser(ctx, l.ConfigDir, o.User)
	if err != nil {
		return netpolicy.EnsureResult{}, err
	}
	defer unlock()
	u, err := ensureAgentUser(ctx, o.User, l.HomeBase)
	if err != nil {
		return netpolicy.EnsureResult{}, err
	}
	res.UID, res.Home = u.UID, u.Home
	held := heldPolicy(l, o.User)
	up := UserPolicy{User: o.User, UID: u.UID, Policy: policy.String()}
	envMode := os.FileMode(0o644)
	keptEnv := ""
	// The relays of the session's other processes that still answer stay (relays.go), with
	// their bound hosts on the allowlist and their CA and placeholders in the environment; a
	// live change (`limactl mcp network`, Secrets nil) keeps them the same way.
	var relays []RelayEntry
	if kept, ok := keptSecrets(l, o.User); ok && policy.Mode() == netpolicy.ModeAllow && (o.Secrets == nil || kept.up.RelayUID == o.StagingUID) {
		if relays = keptRelays(l, kept.up, o.Secrets); len(relays) > 0 {
			up.RelayUID, up.RelayCommands = kept.up.RelayUID, kept.up.RelayCommands
			keptEnv = kept.env
		}
	}
	if o.Secrets != nil {
		// The relay directory and the CA first: the proxy hands bound hosts to the relay from
		// the moment the policy file names them.
		if err := ensureSecrets(ctx, l, o.User, o.StagingUID, o.StagingGID, o.Secrets); err != nil {
			return netpolicy.EnsureResult{}, err
		}
		relays = append(relays, RelayEntry{Name: o.Secrets.Relay, Hosts: o.Secrets.Hosts, RuleTargets: o.Secrets.RuleTargets})
		up.RelayUID, up.RelayCommands = o.StagingUID, true
	}
	if len(relays) > 0 {
		up.withRelays(relays)
		policy = policy.WithHosts(netpolicy.BoundNames(up.SecretHosts))
		up.Policy = policy.String()
		envMode = 0o640 // the placeholders: the agent's own (its group), no other agent's
	}
	res.Policy = policy.String()
	// The relays' ports and keys before the policy file that names the relays (a relay the
	// file does not give a port is reached at its socket).
	if err := writeRelayPorts(l, o.User, relays, o.Secrets); err != nil {
		return netpolicy.EnsureResult{}, err
	}
	data, _ := json.Marshal(up)
	if _, err := writeFileIfChanged(l.policyFile(o.User), append(data, '\n'), 0o644); err != nil {
		return netpolicy.EnsureResult{}, fmt.Errorf("writing the policy of %s: %w", o.User, err)
	}
	if err := logPolicyChange(l, o.User, held, policy.String()); err != nil {
		fmt.Fprintf(os.Stderr, "limactl-mcp: recording the change of the policy of %s: %v\n", o.User, err)
	}
	if o.Secrets == nil && up.SecretHosts == nil && up.RuleTargets == nil {
		if err := dropSecrets(ctx, l, o.User); err != nil {
			return netpolicy.EnsureResult{}, err
		}
	}
	env := ProxyEnv(policy, l.ProxyAddr()) + mergeEnv(secretsEnv(l, o.User, o.Secrets), keptEnv)
	if _, err := writeFileIfChanged(l.envFile(o.User), []byte(env), envMode); err != nil {
		return netpolicy.EnsureResult{}, fmt.Errorf("writing the environment of %s: %w", o.User, err)
	}
	envGID := os.Getegid()
	if envMode == 0o640 {
		envGID = u.GID
	}
	if err := os.Lchown(l.envFile(o.User), os.Geteuid(), envGID); err != nil {
		return netpolicy.EnsureResult{}, fmt.Errorf("writing the environment of %s: %w", o.User, err)
	}
	if err := rebuildRules(ctx, l); err != nil {
		return netpolicy.EnsureResult{}, err
	}
	if err := fixHome(u); err != nil {
		return netpolicy.EnsureResult{}, err
	}
	if o.Own != "" {
		// Made when missing (with its parents) and handed over, walking from "/" by directory
		// descriptors with no symbolic link followed anywhere: the agent owns its home, where a
		// named session's copy is, and may have put a link at any depth.
		if err := checkCleanAbs(o.Own); err != nil || o.Own == "/" {
			return netpolicy.EnsureResult{}, fmt.Errorf("--own %s: not a clean absolute path below /", o.Own)
		}
		if err := ownCopy(o.Own, o.StagingUID, u.UID, u.GID); err != nil {
			return netpolicy.EnsureResult{}, err
		}
	}
	if err := ensureProxy(ctx, l); err != nil {
		return netpolicy.EnsureResult{}, err
	}
	res.Proxy = l.ProxyAddr()
	res.EnvFile = l.envFile(o.User)
	return res, nil
}

// ownCopy makes the copy own when missing (with its parents) and hands it to uid:gid (from the
// staging user stagingUID): Ensure's --own.
func ownCopy(own string, stagingUID, uid, gid int) error {
	fd, err := mkdirAllNoFollow(own, 0o755, uid, gid, stagingUID)
	if err != nil {
		return fmt.Errorf("--own %s: %w", own, err)
	}
	return giveTreeFD(fd, own, stagingUID, uid, gid)
}

// rebuildRules makes the firewall hold the rules of every policy file there is.
func rebuildRules(ctx context.Context, l Layout) error {
	users, problems, err := readAllPolicies(l.ConfigDir)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		// A policy file that does not check out means some user's rules would be missing.
		return fmt.Errorf("a network policy file is not valid, so the rules were not rebuilt: %w", errors.Join(problems...))
	}
	if err := applyRules(ctx, users); err != nil {
		return fmt.Errorf("installing the network policy's firewall rules: %w", err)
	}
	return nil
}

// dropUserPolicy removes a user's policy and environment files and rebuilds the rules without it.
func dropUserPolicy(ctx context.Context, l Layout, user string) error {
	if held := heldPolicy(l, user); held != "" {
		if err := logPolicyChange(l, user, held, "open"); err != nil {
			fmt.Fprintf(os.Stderr, "limactl-mcp: recording the end of the policy of %s: %v\n", user, err)
		}
	}
	for _, path := range []string{l.policyFile(user), l.envFile(user), l.relayPortsFile(user)} {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", path, err)
		}
	}
	if err := dropSecrets(ctx, l, user); err != nil {
		return err
	}
	return rebuildRules(ctx, l)
}

// Remove ends a user's session network: its processes are killed first (so that none runs
// for a moment without rules), then its rules and policy files go. Its log is kept for the
// person's review.
func Remove(ctx context.Context, l Layout, user string) error {
	if os.Geteuid() != 0 {
		return errors.New("net remove must run as root (limactl-mcp runs it with sudo -n)")
	}
	if err := CheckUserName(user); err != nil {
		return err
	}
	if _, found, err := lookupUser("/etc/passwd", user); err == nil && found {
		if err := killUserProcesses(ctx, user); err != nil {
			return err
		}
	}
	return dropUserPolicy(ctx, l, user)
}

// Release ends a user's network policy as Remove does and then hands the staged copy own ("":
// none) back from the agent to the staging user (stagingUID:stagingGID, sudo's SUDO_UID and
// SUDO_GID): entries the agent owns become that user's, reached and walked by directory
// descriptors with no symbolic link followed at any component (the copy and its parents may be
// the agent's). A session going back to open, or being discarded, takes this path.
func Release(ctx context.Context, l Layout, user, own string, stagingUID, stagingGID int) error {
	if err := Remove(ctx, l, user); err != nil {
		return err
	}
	if own == "" {
		return nil
	}
	if err := checkCleanAbs(own); err != nil || own == "/" {
		return fmt.Errorf("--own %s: not a clean absolute path below /", own)
	}
	if stagingUID <= 0 || stagingGID < 0 {
		return errors.New("net release --own hands the copy back to the user who ran sudo (SUDO_UID, SUDO_GID): run it through sudo as that user")
	}
	u, found, err := lookupUser("/etc/passwd", user)
	if err != nil || !found {
		return fmt.Errorf("looking up user %s: not found (%v)", user, err)
	}
	return handBack(own, u.UID, stagingUID, stagingGID)
}

// handBack gives the entries of the copy own that agentUID owns to uid:gid (Release's second half).
func handBack(own string, agentUID, uid, gid int) error {
	fd, err := openDirNoFollow(own)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // nothing staged (a copy never made, or discarded already)
		}
		return fmt.Errorf("--own %s: must be a directory reached through no symbolic link: %w", own, err)
	}
	return giveTreeFD(fd, own, agentUID, uid, gid)
}

// killUserProcesses sends SIGKILL to every process of user until none is left (a process
// forking while pkill walks /proc can leave a child it did not see).
func killUserProcesses(ctx context.Context, user string) error {
	pkill, err := findTool("pkill")
	if err != nil {
		return fmt.Errorf("pkill is not installed in the guest, so the processes of %s cannot be ended (install procps)", user)
	}
	for i := 0; i < 20; i++ {
		err := exec.CommandContext(ctx, pkill, "-KILL", "-u", user).Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			return nil // no process matched
		}
		if err != nil {
			return fmt.Errorf("pkill -KILL -u %s: %w", user, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("processes of %s keep appearing after 20 rounds of pkill -KILL", user)
}

// StagingGIDFromSudo is the gid of the guest user who ran sudo (SUDO_GID), or -1.
func StagingGIDFromSudo() int {
	gid, err := strconv.Atoi(os.Getenv("SUDO_GID"))
	if err != nil || gid < 0 {
		return -1
	}
	return gid
}

// StagingUIDFromSudo is the uid of the guest user who ran sudo (SUDO_UID), or -1.
func StagingUIDFromSudo() int {
	uid, err := strconv.Atoi(os.Getenv("SUDO_UID"))
	if err != nil || uid <= 0 {
		return -1
	}
	return uid
}
