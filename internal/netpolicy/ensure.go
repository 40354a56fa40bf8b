package netpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// EnsureOptions are the arguments of `net ensure`.
type EnsureOptions struct {
	User   string // lmcp-...
	Policy string // the spec
	Own    string // the staged copy to hand to the user, or ""
	// StagingUID is the guest user whose entries under Own are handed over (sudo's SUDO_UID).
	StagingUID int
	Layout     Layout
}

// EnsureResult is `net ensure`'s one line of JSON: the contract with the host side.
type EnsureResult struct {
	User    string `json:"user"`
	UID     int    `json:"uid"`
	Home    string `json:"home"`
	Policy  string `json:"policy"`
	Proxy   string `json:"proxy"`
	EnvFile string `json:"env_file"`
	Log     string `json:"log"`
}

// Ensure puts a user's policy in place: the user, its policy and environment files, the
// rules of every agent user, the staged copy's ownership, the proxy. Each step checks before
// it changes anything, so that a call with nothing to do (every connect of a session) is fast.
// Policy open removes the user's rules and files instead (the user itself is kept).
func Ensure(ctx context.Context, o EnsureOptions) (EnsureResult, error) {
	if os.Geteuid() != 0 {
		return EnsureResult{}, errors.New("net ensure must run as root (limactl-mcp runs it with sudo -n)")
	}
	if err := CheckUserName(o.User); err != nil {
		return EnsureResult{}, err
	}
	policy, err := Parse(o.Policy)
	if err != nil {
		return EnsureResult{}, err
	}
	l := o.Layout
	res := EnsureResult{User: o.User, UID: -1, Policy: policy.String(), Log: l.logFile(o.User)}
	if !policy.Restricted() {
		if err := dropUserPolicy(ctx, l, o.User); err != nil {
			return EnsureResult{}, err
		}
		if u, found, err := lookupUser("/etc/passwd", o.User); err == nil && found {
			res.UID, res.Home = u.UID, u.Home
		}
		return res, nil
	}
	for _, dir := range []string{l.ConfigDir, l.LogDir} {
		if err := ensureRootDir(dir); err != nil {
			return EnsureResult{}, fmt.Errorf("making %s: %w", dir, err)
		}
	}
	u, err := ensureAgentUser(ctx, o.User, l.HomeBase)
	if err != nil {
		return EnsureResult{}, err
	}
	res.UID, res.Home = u.UID, u.Home
	data, _ := json.Marshal(UserPolicy{User: o.User, UID: u.UID, Policy: policy.String()})
	if _, err := writeFileIfChanged(l.policyFile(o.User), append(data, '\n'), 0o644); err != nil {
		return EnsureResult{}, fmt.Errorf("writing the policy of %s: %w", o.User, err)
	}
	if _, err := writeFileIfChanged(l.envFile(o.User), []byte(ProxyEnv(policy, l.ProxyAddr())), 0o644); err != nil {
		return EnsureResult{}, fmt.Errorf("writing the environment of %s: %w", o.User, err)
	}
	if err := rebuildRules(ctx, l); err != nil {
		return EnsureResult{}, err
	}
	if o.Own != "" {
		if err := giveTree(o.Own, o.StagingUID, u.UID, u.GID); err != nil {
			return EnsureResult{}, err
		}
	}
	if err := ensureProxy(ctx, l); err != nil {
		return EnsureResult{}, err
	}
	res.Proxy = l.ProxyAddr()
	res.EnvFile = l.envFile(o.User)
	return res, nil
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
	for _, path := range []string{l.policyFile(user), l.envFile(user)} {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", path, err)
		}
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

// StagingUIDFromSudo is the uid of the guest user who ran sudo (SUDO_UID), or -1.
func StagingUIDFromSudo() int {
	uid, err := strconv.Atoi(os.Getenv("SUDO_UID"))
	if err != nil || uid <= 0 {
		return -1
	}
	return uid
}
