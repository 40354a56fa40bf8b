package enforce

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// agentUser is a user as /etc/passwd has it.
type agentUser struct {
	Name  string
	UID   int
	GID   int
	Home  string
	Shell string
}

// lookupUser finds name in /etc/passwd (read directly: the runner has no cgo, and the agent
// users are local). It reports found=false when there is none.
func lookupUser(passwdPath, name string) (agentUser, bool, error) {
	f, err := os.Open(passwdPath)
	if err != nil {
		return agentUser{}, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 7 || fields[0] != name {
			continue
		}
		uid, err1 := strconv.Atoi(fields[2])
		gid, err2 := strconv.Atoi(fields[3])
		if err1 != nil || err2 != nil {
			return agentUser{}, false, fmt.Errorf("%s: the entry of %s has a bad uid or gid", passwdPath, name)
		}
		return agentUser{Name: name, UID: uid, GID: gid, Home: fields[5], Shell: fields[6]}, true, nil
	}
	return agentUser{}, false, sc.Err()
}

// extraGroups lists the groups of /etc/group that name is a member of besides its own: an
// agent user is in none (sudo, docker, lxd, adm would each give it a way around the policy).
func extraGroups(groupPath, name string) ([]string, error) {
	data, err := os.ReadFile(groupPath)
	if err != nil {
		return nil, err
	}
	var groups []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Split(line, ":")
		if len(fields) < 4 || fields[0] == name {
			continue
		}
		for _, m := range strings.Split(fields[3], ",") {
			if m == name {
				groups = append(groups, fields[0])
			}
		}
	}
	return groups, nil
}

// ensureAgentUser creates the agent user if it is missing (its own group, home under
// homeBase, bash, password locked, no other group) and checks an existing one is still such a
// user: a name that someone else made, or that has since gained a group, is refused.
func ensureAgentUser(ctx context.Context, name, homeBase string) (agentUser, error) {
	home := homeBase + "/" + name
	u, found, err := lookupUser("/etc/passwd", name)
	if err != nil {
		return agentUser{}, fmt.Errorf("looking up user %s: %w", name, err)
	}
	if !found {
		useradd, err := findTool("useradd")
		if err != nil {
			return agentUser{}, fmt.Errorf("useradd is not installed in the guest, so no agent user can be made for the network policy (install the passwd package)")
		}
		if err := ensureRootDir(homeBase); err != nil {
			return agentUser{}, fmt.Errorf("making %s: %w", homeBase, err)
		}
		// -U: a group of its own; -m -K UMASK=077: a home only it reads; no -G: no other
		// group; no -p: the password stays locked ("!").
		if out, err := exec.CommandContext(ctx, useradd, "-U", "-m", "-d", home, "-K", "UMASK=077", "-s", "/bin/bash",
			"-c", "limactl-mcp agent", name).CombinedOutput(); err != nil {
			return agentUser{}, fmt.Errorf("useradd %s: %v: %s", name, err, strings.TrimSpace(string(out)))
		}
		if u, found, err = lookupUser("/etc/passwd", name); err != nil || !found {
			return agentUser{}, fmt.Errorf("user %s is not in /etc/passwd after useradd (%v)", name, err)
		}
	}
	if u.UID == 0 || u.GID == 0 {
		return agentUser{}, fmt.Errorf("user %s has uid or gid 0: not an agent user", name)
	}
	if u.Home != home {
		return agentUser{}, fmt.Errorf("user %s exists with home %s, not %s: it was not made by limactl-mcp; remove it or pick another session", name, u.Home, home)
	}
	groups, err := extraGroups("/etc/group", name)
	if err != nil {
		return agentUser{}, fmt.Errorf("reading /etc/group: %w", err)
	}
	if len(groups) > 0 {
		return agentUser{}, fmt.Errorf("user %s is a member of %s: an agent user is in no group but its own (remove it with gpasswd -d)", name, strings.Join(groups, ","))
	}
	for _, f := range schedulerDenyFiles {
		if err := denyListed(f, name); err != nil {
			return agentUser{}, fmt.Errorf("denying %s cron and at jobs: %w", name, err)
		}
	}
	return u, nil
}

// fixHome makes the agent's home its own, mode 0700, when root owns it (a copy relocated into
// the home by an older version was made, with the home above it, before the user existed, and
// useradd -m leaves a home that exists as it is). The home is reached by directory descriptors
// with no symbolic link followed, and changed through its descriptor.
func fixHome(u agentUser) error {
	fd, err := openDirNoFollow(u.Home)
	if err != nil {
		return fmt.Errorf("the home of %s: %w", u.Name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("the home of %s: %w", u.Name, err)
	}
	if st.Uid != 0 {
		return nil
	}
	if err := unix.Fchown(fd, u.UID, u.GID); err != nil {
		return fmt.Errorf("chown %s: %w", u.Home, err)
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return fmt.Errorf("chmod %s: %w", u.Home, err)
	}
	return nil
}

// schedulerDenyFiles keep an agent user from scheduling jobs (cron's @reboot, at): after a
// VM boot they would run before the next `net ensure` puts its rules back.
var schedulerDenyFiles = []string{"/etc/cron.deny", "/etc/at.deny"}

// denyListed adds name to the deny file path (one name per line) unless it is there.
func denyListed(path, name string) error {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == name {
			return nil
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		name = "\n" + name
	}
	if _, err := f.WriteString(name + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
