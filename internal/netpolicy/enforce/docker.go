package enforce

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// A session under a network policy gets a Docker daemon of its own: a rootless dockerd running
// as the agent user (docs/docker.md). It is a systemd unit of root's (an instance of
// limactl-mcp-docker@.service, User= the agent), so that the agent cannot change how it is
// started and `systemctl stop` ends everything in its cgroup: rootlesskit, slirp4netns, dockerd,
// containerd and every container, whatever uid of the agent's subordinate range they run as.
//
// What keeps it inside the policy:
//   - every process of the daemon is the agent's uid or one of its subordinate uids, which no
//     other user's range overlaps (ensureSubIDs);
//   - the daemon and its containers are in rootlesskit's network namespace; their traffic
//     leaves it only through slirp4netns, a process of the agent's uid in the guest's own
//     namespace, so the agent's firewall rules are slirp4netns's rules (none: no egress; allow:
//     only loopback, where the proxy is, reached as 10.0.2.2);
//   - a socket of a subordinate uid in the guest's namespace (which no part of the daemon
//     makes) is refused outright by the agent's rules (chainRules), whatever it is for.
//
// The daemon's socket is under the agent's home, not /run: the agent's commands run with an
// empty /run of their own (confine.go).

const (
	// dockerUnit is the template unit; dockerUnit+USER+".service" is one agent's daemon.
	dockerUnit = "limactl-mcp-docker@"
	// dockerRunDir is the daemon's XDG_RUNTIME_DIR, relative to the agent's home.
	dockerRunDir = ".docker-run"
	// subIDCount is the size of an agent's subordinate uid and gid ranges; subIDBase is below
	// the first (the usual first range of /etc/subuid).
	subIDCount = 65536
	subIDBase  = 100000
	// slirpHostLoopback is the guest's loopback as the daemon and its containers reach it
	// through slirp4netns.
	slirpHostLoopback = "10.0.2.2"
)

// DockerSocket is the path of an agent user's Docker socket in layout l.
func (l Layout) DockerSocket(user string) string {
	return filepath.Join(l.home(user), dockerRunDir, "docker.sock")
}

func (l Layout) dockerEnvFile(user string) string {
	return filepath.Join(l.ConfigDir, user+".docker.env")
}

// dockerTools are the guest's parts of a rootless daemon.
type dockerTools struct {
	RootlessKit string
}

// dockerInstalled finds the parts when the guest has what a rootless daemon needs: dockerd,
// containerd, rootlesskit, slirp4netns and newuidmap/newgidmap (uidmap); ok is false when one
// is missing.
func dockerInstalled() (tools dockerTools, ok bool) {
	for _, t := range []string{"dockerd", "containerd", "slirp4netns", "newuidmap", "newgidmap", "usermod"} {
		if _, err := findTool(t); err != nil {
			return dockerTools{}, false
		}
	}
	kit, err := findTool("rootlesskit")
	if err != nil {
		return dockerTools{}, false
	}
	return dockerTools{RootlessKit: kit}, true
}

// dockerChildScript runs in rootlesskit's namespaces (as dockerd-rootless.sh's second half
// does): containerd first, waited for without a time limit (dockerd waits 15 s for the one it
// starts itself, which an emulated guest misses), then dockerd on it.
const dockerChildScript = `#!/bin/sh
# Written by limactl-mcp (the runner's net ensure): the rootless Docker daemon of an agent user,
# in rootlesskit's namespaces (docs/docker.md).
set -e
rm -f /run/docker /run/containerd /run/xtables.lock
run=$XDG_RUNTIME_DIR/containerd
mkdir -p "$run"
containerd --config /dev/null --address "$run/containerd.sock" --root "$HOME/.local/share/docker/containerd" --state "$run/state" &
until [ -S "$run/containerd.sock" ]; do
	kill -0 $! 2>/dev/null || { echo "containerd exited" >&2; exit 1; }
	sleep 0.5
done
# cgroupfs: on cgroup v2 dockerd would pick the systemd driver, which needs a systemd --user
# and a session bus the agent does not have.
exec dockerd --containerd="$run/containerd.sock" --exec-opt native.cgroupdriver=cgroupfs "$@"
`

func (l Layout) dockerChildFile() string { return filepath.Join(l.ConfigDir, "docker-child.sh") }

// DockerEnv is what the agent's environment gets for its daemon (KEY=VALUE lines).
func DockerEnv(l Layout, user string) string {
	return "DOCKER_HOST=unix://" + l.DockerSocket(user) + "\n"
}

// dockerDaemonEnv is the daemon's own environment for a policy: under allow, pulls go through
// the proxy (on the guest's loopback, 10.0.2.2 from inside rootlesskit's namespace).
func dockerDaemonEnv(p netpolicy.Policy, proxyAddr string) string {
	if p.Mode() != netpolicy.ModeAllow {
		return ""
	}
	_, port, _ := strings.Cut(proxyAddr, ":")
	url := "http://" + slirpHostLoopback + ":" + port
	return "HTTP_PROXY=" + url + "\nHTTPS_PROXY=" + url + "\nNO_PROXY=localhost,127.0.0.1\n"
}

// dockerUnitText is the template unit of the agents' daemons in layout l.
//
// It starts rootlesskit with the flags of Docker's dockerd-rootless.sh but one, and
// dockerChildScript as its child: the script passes --disable-host-loopback, which would keep
// the daemon from the proxy on the guest's loopback (10.0.2.2 in the namespace). The agent
// reaches the guest's loopback itself, so this gives its containers nothing it lacks.
func dockerUnitText(l Layout, tools dockerTools) string {
	home := filepath.Join(l.HomeBase, "%i")
	run := filepath.Join(home, dockerRunDir)
	return "# Written by limactl-mcp (the runner's net ensure): the rootless Docker daemon of agent user %i.\n" +
		"[Unit]\nDescription=limactl-mcp rootless Docker of %i\n\n" +
		"[Service]\nUser=%i\n" +
		"Environment=HOME=" + home + "\n" +
		"Environment=XDG_RUNTIME_DIR=" + run + "\n" +
		"Environment=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n" +
		"EnvironmentFile=-" + filepath.Join(l.ConfigDir, "%i.docker.env") + "\n" +
		"ExecStartPre=/bin/mkdir -p -m 0700 " + run + "\n" +
		"ExecStart=" + tools.RootlessKit + " --net=slirp4netns --mtu=65520 --slirp4netns-sandbox=auto --slirp4netns-seccomp=auto" +
		" --port-driver=builtin --copy-up=/etc --copy-up=/run --propagation=rslave --state-dir=" + filepath.Join(run, "rootlesskit") +
		" /bin/sh " + l.dockerChildFile() + "\n" +
		"Delegate=yes\nKillMode=control-group\nTimeoutStopSec=30\n"
}

// ensureDocker gives the agent u its subordinate ids and starts its daemon (restarting it when
// the policy's daemon environment changed). It returns at once: the daemon comes up in the
// background (a few seconds; `docker` fails until its socket is there).
func ensureDocker(ctx context.Context, l Layout, u agentUser, p netpolicy.Policy, tools dockerTools) error {
	if err := ensureSubIDs(ctx, u); err != nil {
		return err
	}
	childChanged, err := writeFileIfChanged(l.dockerChildFile(), []byte(dockerChildScript), 0o755)
	if err != nil {
		return fmt.Errorf("writing the Docker daemon's start script: %w", err)
	}
	unitPath := filepath.Join(systemdUnitDir, dockerUnit+".service")
	unitChanged, err := writeFileIfChanged(unitPath, []byte(dockerUnitText(l, tools)), 0o644)
	if err != nil {
		return fmt.Errorf("writing the Docker daemon's unit: %w", err)
	}
	if unitChanged {
		if err := runSystemctl(ctx, "daemon-reload"); err != nil {
			return err
		}
	}
	envChanged, err := writeFileIfChanged(l.dockerEnvFile(u.Name), []byte(dockerDaemonEnv(p, l.ProxyAddr())), 0o644)
	if err != nil {
		return fmt.Errorf("writing the environment of the Docker daemon of %s: %w", u.Name, err)
	}
	verb := "start"
	if unitChanged || envChanged || childChanged {
		verb = "restart"
	}
	return runSystemctl(ctx, verb, "--no-block", dockerUnit+u.Name+".service")
}

// stopDocker stops an agent's daemon and every container with it (the unit's cgroup), and
// removes its environment file. Nothing to stop is not an error.
func stopDocker(ctx context.Context, l Layout, user string) error {
	if _, err := os.Stat(filepath.Join(systemdUnitDir, dockerUnit+".service")); err == nil && hasSystemd() {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "systemctl", "stop", dockerUnit+user+".service").CombinedOutput()
		if err != nil {
			return fmt.Errorf("stopping the Docker daemon of %s: %v: %s", user, err, strings.TrimSpace(string(out)))
		}
	}
	if err := os.Remove(l.dockerEnvFile(user)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// idRange is one line of /etc/subuid or /etc/subgid: Name's ids First..First+Count-1.
type idRange struct {
	Name         string
	First, Count int
}

func (r idRange) last() int { return r.First + r.Count - 1 }

func (r idRange) overlaps(o idRange) bool { return r.First <= o.last() && o.First <= r.last() }

// parseSubIDs reads the lines of a subordinate id file (NAME:FIRST:COUNT; a line that is not
// one is refused, since a range we cannot read might overlap one we hand out).
func parseSubIDs(data string) ([]idRange, error) {
	var out []idRange
	sc := bufio.NewScanner(strings.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d is not NAME:FIRST:COUNT", n)
		}
		first, err1 := strconv.Atoi(f[1])
		count, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || first < 0 || count < 0 {
			return nil, fmt.Errorf("line %d has a bad first id or count", n)
		}
		out = append(out, idRange{Name: f[0], First: first, Count: count})
	}
	return out, sc.Err()
}

// pickSubIDs checks the ranges user already has, or chooses a new one: every range of the user
// must be overlapped by no other entry's range (a name or a uid) and hold no uid of a user
// (passwdIDs), so that no two agents', and no agent's and the Lima user's, containers share an
// id. have says the user already has a range of at least subIDCount ids.
func pickSubIDs(ranges []idRange, user string, uid int, passwdIDs []int) (first int, have bool, err error) {
	var mine, others []idRange
	for _, r := range ranges {
		if r.Name == user || r.Name == strconv.Itoa(uid) {
			mine = append(mine, r)
		} else {
			others = append(others, r)
		}
	}
	clash := func(r idRange) error {
		for _, o := range others {
			if r.overlaps(o) {
				return fmt.Errorf("the subordinate ids %d-%d of %s overlap those of %s: remove one (usermod --del-subuids/--del-subgids)", r.First, r.last(), user, o.Name)
			}
		}
		for _, id := range passwdIDs {
			if id >= r.First && id <= r.last() {
				return fmt.Errorf("the subordinate ids %d-%d of %s hold id %d of a user", r.First, r.last(), user, id)
			}
		}
		return nil
	}
	for _, r := range mine {
		if err := clash(r); err != nil {
			return 0, false, err
		}
		if r.Count >= subIDCount {
			have = true
		}
	}
	if have {
		return 0, true, nil
	}
	// The next block of subIDCount above every range there is (and above subIDBase), moved on
	// past any user's id.
	next := subIDBase
	for _, r := range ranges {
		if r.last()+1 > next {
			next = r.last() + 1
		}
	}
	sort.Ints(passwdIDs)
	for {
		cand := idRange{Name: user, First: next, Count: subIDCount}
		if cand.last() > 1<<31-2 {
			return 0, false, errors.New("no free block of subordinate ids is left below 2^31")
		}
		moved := false
		for _, id := range passwdIDs {
			if id >= cand.First && id <= cand.last() {
				next, moved = id+1, true
			}
		}
		if !moved {
			return cand.First, false, nil
		}
	}
}

// subIDFiles are the subordinate id files (variables for the tests).
var subUIDFile, subGIDFile = "/etc/subuid", "/etc/subgid"

// ensureSubIDs gives the agent u a range of subIDCount subordinate uids and gids of its own
// (usermod writes the files, with shadow's locking), or checks the one it has.
func ensureSubIDs(ctx context.Context, u agentUser) error {
	ids, err := passwdIDs()
	if err != nil {
		return err
	}
	var args []string
	for _, f := range []struct{ path, flag string }{{subUIDFile, "--add-subuids"}, {subGIDFile, "--add-subgids"}} {
		data, err := os.ReadFile(f.path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		ranges, err := parseSubIDs(string(data))
		if err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		first, have, err := pickSubIDs(ranges, u.Name, u.UID, ids)
		if err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		if !have {
			args = append(args, f.flag, fmt.Sprintf("%d-%d", first, first+subIDCount-1))
		}
	}
	if len(args) == 0 {
		return nil
	}
	usermod, err := findTool("usermod")
	if err != nil {
		return errors.New("usermod is not installed in the guest, so the agent user gets no subordinate ids for Docker (install the passwd package)")
	}
	if out, err := exec.CommandContext(ctx, usermod, append(args, u.Name)...).CombinedOutput(); err != nil {
		return fmt.Errorf("usermod %s %s: %v: %s", strings.Join(args, " "), u.Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// passwdIDs are the uids and gids of /etc/passwd.
func passwdIDs() ([]int, error) {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 4 {
			continue
		}
		for _, s := range f[2:4] {
			if id, err := strconv.Atoi(s); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// subUIDRanges are the subordinate uid ranges of each user of users (by name or uid), read
// for the firewall rules; a file that is missing means none.
func subUIDRanges(users []UserPolicy) (map[string][]idRange, error) {
	data, err := os.ReadFile(subUIDFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ranges, err := parseSubIDs(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", subUIDFile, err)
	}
	out := map[string][]idRange{}
	for _, u := range users {
		for _, r := range ranges {
			if (r.Name == u.User || r.Name == strconv.Itoa(u.UID)) && r.Count > 0 {
				out[u.User] = append(out[u.User], r)
			}
		}
	}
	return out, nil
}
