//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Issue 23, findings 1 and 2: each session its own room in the guest, and no value of
// `shell --env` on any command line or in any log.

func nonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// room is one session of the rooms test: its project, its server, and where it keeps things
// in the guest.
type room struct {
	name    string
	dir     string // the host working directory, and (same path) the guest copy
	s       *server
	id      string
	user    string // the guest user the session runs as
	home    string // that user's guest home
	secret  string // in secret.txt
	bgMark  string // in the output of its background process
	targets []string
}

func newRoom(t *testing.T, name, network string) *room {
	t.Helper()
	r := &room{name: name, secret: "ROOM-SECRET-" + name + "-" + nonce(), bgMark: "ROOM-BG-" + name + "-" + nonce()}
	r.dir = project(t, map[string]string{"secret.txt": r.secret + "\n", "src/code.txt": "code\n"})
	gitInit(t, r.dir)
	r.id = staging.SessionID(r.dir)
	args := []string{"serve", instanceName}
	if network != "" {
		args = append(args, "--network="+network)
	}
	r.s = startServerIn(t, r.dir, nil, "limactl-mcp", args...)
	discardOnCleanup(t, r.dir)
	out, isErr, text := runShell(t, r.s, `id -un; printf '%s\n' "$HOME"`)
	if isErr || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Fatalf("%s: run_shell_command: %s", name, text)
	}
	f := strings.Split(strings.TrimSpace(out.Stdout), "\n")
	if len(f) != 2 {
		t.Fatalf("%s: id and home: %q", name, out.Stdout)
	}
	r.user, r.home = f[0], f[1]
	// Something in each store: a checkpoint, and a background process's record.
	if res, text := callTool(t, r.s.Session, "checkpoint", map[string]any{"label": "rooms"}); res.IsError {
		t.Fatalf("%s: checkpoint: %s", name, text)
	}
	if res, text := callTool(t, r.s.Session, "run_shell_command", map[string]any{"command": []string{"sh", "-c", "echo " + r.bgMark + "; sleep 600"}, "directory": r.dir, "background": true}); res.IsError {
		t.Fatalf("%s: background: %s", name, text)
	}
	return r
}

// findTargets lists (as root, in the guest) the paths of r's room that other sessions try:
// the copy, its files and its staged .git, the checkpoint store, the background records and
// the session's marker, with files of each; and the names found in the stores.
func (r *room) findTargets(t *testing.T) (names []string) {
	t.Helper()
	cache := path.Join(r.home, ".cache/limactl-mcp")
	ckpt := path.Join(cache, "checkpoints", r.id)
	bg := path.Join(cache, "bg", r.id)
	out := guestShell(t, "sudo sh -c "+shq(
		"for d in "+shq(ckpt)+" "+shq(bg)+"; do [ -d \"$d\" ] || echo \"MISSING $d\"; find \"$d\" -type f | sort | head -n 2; "+
			"find \"$d\" -mindepth 1 -maxdepth 3 | sed 's|.*/|NAME |'; done; "+
			"grep -rlF "+shq(r.bgMark)+" "+shq(bg)+" | head -n 1"))
	if strings.Contains(out, "MISSING") {
		t.Fatalf("%s: a store is missing in the guest:\n%s", r.name, out)
	}
	r.targets = []string{r.dir, r.dir + "/secret.txt", r.dir + "/src", r.dir + "/.git", r.dir + "/.git/HEAD", r.dir + "/.git/config",
		cache, path.Join(cache, "checkpoints"), ckpt, path.Join(cache, "bg"), bg, path.Join(cache, "sessions", r.id)}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case strings.HasPrefix(l, "NAME "):
			if n := strings.TrimPrefix(l, "NAME "); len(n) >= 6 {
				names = append(names, n)
			}
		case strings.HasPrefix(l, "/"):
			r.targets = append(r.targets, l)
		}
	}
	return names
}

var attackCommands = []string{"ls -la", "cat", "stat", "find"}

// attackScript tries ls, cat, stat and find on every target (bash): each attempt prints RS, its
// number, its output (capped) and RS, its exit status.
func attackScript(targets []string) string {
	var b strings.Builder
	i := 0
	for _, tg := range targets {
		for _, c := range attackCommands {
			fmt.Fprintf(&b, "printf '\\036%%d\\n' %d; %s %s 2>&1 | head -c 2000; printf '\\036rc=%%d\\n' \"${PIPESTATUS[0]}\"\n", i, c, shq(tg))
			i++
		}
	}
	return b.String()
}

// attempt is one try of attackScript.
type attempt struct {
	cmd, target, out string
	rc               int
}

func parseAttempts(t *testing.T, targets []string, out string) []attempt {
	t.Helper()
	var got []attempt
	parts := strings.Split(out, "\036")
	for j := 1; j+1 < len(parts); j += 2 {
		var i int
		head, body, _ := strings.Cut(parts[j], "\n")
		if _, err := fmt.Sscanf(head, "%d", &i); err != nil || i != len(got) {
			t.Fatalf("attempt output out of order at %q:\n%s", head, out)
		}
		var rc int
		if _, err := fmt.Sscanf(parts[j+1], "rc=%d", &rc); err != nil {
			t.Fatalf("attempt %d: no exit status in %q", i, parts[j+1])
		}
		got = append(got, attempt{cmd: attackCommands[i%len(attackCommands)], target: targets[i/len(attackCommands)], out: body, rc: rc})
	}
	if len(got) != len(targets)*len(attackCommands) {
		t.Fatalf("%d attempts reported, want %d:\n%s", len(got), len(targets)*len(attackCommands), out)
	}
	return got
}

// attack runs, as attacker's agent, every try on victim's room and checks that each is refused
// and shows nothing of the room: its secrets, or the names in it. The copy's own root (and
// the Lima user's store directory) sit in directories others may list, so their own stat is
// not counted; what is in them is.
func attack(t *testing.T, attacker, victim *room, names []string) (tries int) {
	t.Helper()
	out, _, text := runShell(t, attacker.s, attackScript(victim.targets))
	if out.ExitCode == nil {
		t.Fatalf("%s → %s: run_shell_command: %s", attacker.name, victim.name, text)
	}
	forbidden := append([]string{victim.secret, victim.bgMark, "secret.txt", "code.txt", "HEAD", "objects", "refs/", "ROOM-"}, names...)
	for _, a := range parseAttempts(t, victim.targets, out.Stdout) {
		if a.cmd == "stat" && (a.target == victim.dir || a.target == path.Join(victim.home, ".cache/limactl-mcp")) {
			continue
		}
		tries++
		shown := strings.ReplaceAll(a.out, a.target, "<target>")
		if a.rc == 0 {
			t.Errorf("%s (%s) → %s: `%s %s` succeeded:\n%s", attacker.name, attacker.user, victim.name, a.cmd, a.target, shown)
			continue
		}
		for _, f := range forbidden {
			if strings.Contains(shown, f) {
				t.Errorf("%s (%s) → %s: `%s %s` showed %q:\n%s", attacker.name, attacker.user, victim.name, a.cmd, a.target, f, shown)
				break
			}
		}
	}
	return tries
}

// Each session its own room (issue 23, finding 1): an open session and two under
// --network=none; each one's agent tries ls, cat, stat and find on the others' copies (their
// staged .git included), checkpoint stores, background records and markers: every try is
// refused. (The open session's agent is the Lima user, who has sudo: it tries without.) Then a
// copy and a store opened up as an older version left them are closed again at the next
// connect.
func TestRoomsSessionsApart(t *testing.T) {
	var rooms []*room
	for _, sp := range []struct{ name, network string }{{"open", ""}, {"none1", "none"}, {"none2", "none"}} {
		rooms = append(rooms, newRoom(t, sp.name, sp.network))
	}
	if rooms[0].user != vm.User || !strings.HasPrefix(rooms[1].user, "lmcp-") || !strings.HasPrefix(rooms[2].user, "lmcp-") {
		t.Fatalf("users: %s %s %s", rooms[0].user, rooms[1].user, rooms[2].user)
	}
	names := make([][]string, len(rooms))
	for i, r := range rooms {
		names[i] = r.findTargets(t)
		// The room's own agent reads it (so the paths are right and a refusal means something).
		out, _, text := runShell(t, r.s, "cat "+shq(r.dir+"/secret.txt")+" "+shq(r.dir+"/.git/HEAD")+" && ls "+shq(r.targets[len(r.targets)-1]))
		if out.ExitCode == nil || *out.ExitCode != 0 || !strings.Contains(out.Stdout, r.secret) {
			t.Fatalf("%s cannot read its own room: %s", r.name, text)
		}
	}
	tries := 0
	for _, pair := range [][2]int{{1, 0}, {0, 1}, {1, 2}, {2, 1}, {2, 0}} {
		tries += attack(t, rooms[pair[0]], rooms[pair[1]], names[pair[1]])
	}
	t.Logf("%d tries across 5 pairs of sessions, each refused", tries)
	if t.Failed() {
		return
	}

	// A copy and a store left open by an older version are closed at the next connect (here,
	// `limactl mcp shell` in the session's directory).
	open, none := rooms[0], rooms[1]
	guestShell(t, "chmod 755 "+shq(open.dir)+" "+shq(path.Join(open.home, ".cache/limactl-mcp"))+" && sudo chmod 755 "+shq(none.dir))
	for _, r := range []*room{open, none} {
		if _, stderr, code := mcpShell(t, r.dir, nil, "--no-review", instanceName, "--", "true"); code != 0 {
			t.Fatalf("%s: shell: exit %d\n%s", r.name, code, stderr)
		}
	}
	modes := guestShell(t, "sudo stat -c '%a %n' "+shq(open.dir)+" "+shq(path.Join(open.home, ".cache/limactl-mcp"))+" "+shq(none.dir))
	for _, l := range strings.Split(strings.TrimSpace(modes), "\n") {
		if !strings.HasPrefix(l, "700 ") {
			t.Errorf("not closed again at the next connect: %s", l)
		}
	}
}

// secretReader is a root reader in the guest (python3: one process, no fork per file read):
// until $1/stop exists, it sweeps every process's cmdline and environ for the value in
// $1/pat and notes each hit with its chain of parents' command lines ($1/hits). A process's
// command line and parent are read before its environment, so that a process gone by the
// time the hit is noted (a login shell's short-lived children: /etc/profile's $(id -u)) is
// still told; a process read no more is no hit. Once it has seen the value in the environment
// of the command (a chain with the marker $2) in 3 sweeps, or after 4 minutes without, it
// writes to the FIFO $1/go, which the command waits on, and goes on sweeping.
const secretReader = `import os, subprocess, sys, time
d, m = sys.argv[1], sys.argv[2].encode()
with open(d + "/pat", "rb") as f:
    pat = f.read().split(b"\n")[0]
def read(p, name):
    try:
        with open("/proc/%s/%s" % (p, name), "rb") as f:
            return f.read()
    except OSError:
        return None
def info(p):
    c, s = read(p, "cmdline"), read(p, "status")
    if c is None or s is None:
        return None
    pp = "0"
    for l in s.splitlines():
        if l.startswith(b"PPid:"):
            pp = l.split()[1].decode()
    return pp, c.replace(b"\0", b" ").replace(b"\n", b" ")
t0 = time.time(); seen = 0; went = None
hits = open(d + "/hits", "ab", buffering=0)
while not os.path.exists(d + "/stop") and time.time() - t0 < 600:
    own = False
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    known = {}
    for p in pids:
        i = info(p)
        if i:
            known[p] = i
    for p in pids:
        i = info(p)
        if i is None:
            continue
        for kind in ("cmdline", "environ"):
            data = read(p, kind)
            if data is None or pat not in data:
                continue
            chain = b""; q = p; n = 0
            while q != "0" and n < 40:
                x = i if q == p else (known.get(q) or info(q))
                if x is None:
                    chain += b" | " + q.encode() + b":"
                    break
                chain += b" | " + q.encode() + b":" + x[1]
                q = x[0]; n += 1
            hits.write(b"HIT /proc/" + p.encode() + b"/" + kind.encode() + chain + b"\n")
            if kind == "environ" and m in chain:
                own = True
    if own:
        seen += 1
    if went is None and (seen >= 3 or time.time() - t0 > 240):
        with open(d + "/went", "w") as f:
            f.write("go after %d\n" % seen)
        went = subprocess.Popen(["timeout", "30", "sh", "-c", 'echo go > "$1"', "sh", d + "/go"])
    if went is not None:
        went.poll()
with open(d + "/finished", "w") as f:
    f.write("done\n")
`

// No value on any command line or in any log (issue 23, finding 2): `limactl mcp shell --env
// SECRET_X` with a value of its own, open and under --network=none. While the command runs, a
// root reader in the guest reads every process's cmdline and environ, and the test every host
// process's command line and the environment of every ssh; after it, the whole journal and
// the guest's /var/log, /tmp, /var/tmp, /dev/shm, the homes and limactl-mcp's own directories
// are searched. The value is found in the environment of the command only. (The command
// starts no process of its own: it waits on a FIFO, so that every sighting can be told.)
func TestShellEnvValueNowhere(t *testing.T) {
	for _, network := range []string{"", "none"} {
		name := "open"
		if network != "" {
			name = network
		}
		t.Run(name, func(t *testing.T) { shellEnvValueNowhere(t, network) })
	}
}

func shellEnvValueNowhere(t *testing.T, network string) {
	value := "lmcp-secret-value-" + nonce()
	marker := "lmcp-env-command-" + nonce()
	// Outside what the sweep reads, and not under /run, which an agent under a policy does not
	// see (net as gives it an empty one).
	d := "/var/cache/lmcp-e2e-env-" + nonce()
	dir := project(t, map[string]string{"a.txt": "a\n"})
	discardOnCleanup(t, dir)

	// The pattern reaches the guest on stdin, into a directory only root reads but for the
	// FIFO that the command waits on.
	put := vm.Command(ctxT(t, 2*time.Minute), "limactl", "shell", "--workdir", "/", instanceName, "--", "sudo", "sh", "-c",
		"mkdir -p "+d+" && chmod 711 "+d+" && mkfifo -m 644 "+d+"/go && umask 077 && cat > "+d+"/pat && : > "+d+"/hits")
	put.Stdin = strings.NewReader(value + "\n")
	if out, err := put.CombinedOutput(); err != nil {
		t.Fatalf("putting the pattern in the guest: %v\n%s", err, out)
	}
	t.Cleanup(func() { guestShell(t, "sudo touch "+d+"/stop; sleep 2; sudo rm -rf "+d) })
	reader := vm.Command(ctxT(t, 2*time.Minute), "limactl", "shell", "--workdir", "/", instanceName, "--", "sudo", "sh", "-c",
		"nohup setsid python3 -c "+shq(secretReader)+" "+d+" "+marker+" >/dev/null 2>"+d+"/reader.err </dev/null &")
	if out, err := reader.CombinedOutput(); err != nil {
		t.Fatalf("starting the reader in the guest: %v\n%s", err, out)
	}

	// On the host: every process's command line, and the environment of every ssh.
	hostHits := map[string]bool{}
	samples := 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, h := range hostProcsWith(value) {
				hostHits[h] = true
			}
			samples++
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	args := []string{"--no-review", "--env", "SECRET_X", instanceName, "--", "sh", "-c", `read x < ` + d + `/go; echo "got $x"`, marker}
	if network != "" {
		args = append([]string{"--network=" + network}, args...)
	}
	stdout, stderr, code := mcpShell(t, dir, []string{"SECRET_X=" + value}, args...)
	close(stop)
	<-done
	if code != 0 || !strings.Contains(stdout, "got go") {
		t.Fatalf("shell: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stderr+stdout, value) {
		t.Errorf("the value is in shell's output:\n%s\n%s", stdout, stderr)
	}
	for h := range hostHits {
		t.Errorf("on the host: %s", h)
	}

	// After the run: three more sweeps, then the reader stops.
	guestShell(t, "i=0; while ! sudo test -e "+d+"/finished && [ $i -lt 100 ]; do sleep 1; i=$((i+1)); [ $i = 15 ] && sudo touch "+d+"/stop; done; true")
	hits := guestShell(t, "sudo cat "+d+"/hits "+d+"/went")
	own := map[string]bool{}
	var gone, bad []string
	lines := strings.Split(strings.TrimSpace(hits), "\n")
	sightings := 0
	for _, h := range lines {
		if !strings.HasPrefix(h, "HIT ") {
			continue
		}
		sightings++
		f, chain, _ := strings.Cut(strings.TrimPrefix(h, "HIT "), " | ")
		pid := strings.Split(f, "/")[2]
		switch {
		case strings.HasSuffix(f, "/environ") && strings.Contains(chain, marker):
			own[pid] = true // the command's own environment
		case strings.HasSuffix(f, "/environ") && strings.TrimSpace(chain) == pid+":":
			gone = append(gone, pid) // gone before its command line was read
		default:
			bad = append(bad, h)
		}
	}
	for _, pid := range gone {
		if !own[pid] {
			bad = append(bad, "process "+pid+" (gone before it could be told): had the value in its environment")
		}
	}
	for _, h := range bad {
		t.Errorf("in the guest, outside the command's environment: %s", h)
	}
	if len(own) == 0 {
		t.Errorf("the reader never saw the value in the command's own environment: the check is blind\n%s\nthe reader's errors:\n%s", hits, guestShell(t, "sudo cat "+d+"/reader.err; true"))
	}

	// The journal, and files anywhere we or the guest write.
	found := guestShell(t, "sudo sh -c "+shq("journalctl --no-pager -o export | grep -a -c -F -f "+d+"/pat; "+
		"grep -r -l -a -F -f "+d+"/pat /var/log /tmp /var/tmp /dev/shm /home /root /var/lib/limactl-mcp /etc/limactl-mcp /usr/local/libexec/limactl-mcp 2>/dev/null; true"))
	if strings.TrimSpace(found) != "0" {
		t.Errorf("the value is in the journal (count first) or in these files:\n%s", found)
	}
	if network != "" {
		// The search above reads the journal that keeps sudo's command lines: the run's are there.
		if n := strings.TrimSpace(guestShell(t, "sudo sh -c "+shq("journalctl --no-pager -o export | grep -a -c 'USER=lmcp-'; true"))); n == "0" || n == "" {
			t.Errorf("the journal holds no sudo line for an agent user (%q): the search of the journal is blind", n)
		}
	}
	t.Logf("%d sightings in the command's own environment (%d processes), none elsewhere; %d host samples", sightings, len(own), samples)
}

// hostProcsWith lists host processes whose command line holds value, and ssh processes whose
// environment does.
func hostProcsWith(value string) []string {
	var hits []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range dirs {
		if b, err := os.ReadFile(p + "/cmdline"); err == nil && strings.Contains(string(b), value) {
			hits = append(hits, p+"/cmdline: "+strings.ReplaceAll(string(b), "\x00", " "))
		}
		comm, _ := os.ReadFile(p + "/comm")
		if strings.TrimSpace(string(comm)) == "ssh" {
			if b, err := os.ReadFile(p + "/environ"); err == nil && strings.Contains(string(b), value) {
				hits = append(hits, p+"/environ of ssh")
			}
		}
	}
	return hits
}
