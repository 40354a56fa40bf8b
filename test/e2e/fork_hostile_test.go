//go:build e2e

package e2e

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/hostile"
)

// forkAttacks are what an agent under a network policy can do to its copy against a fork of it
// (which copies it from its agent user to another), besides the hostile-tree generator's:
// links into other agents' homes and root's files, a hard link to a file it does not own, a
// socket, a loop, a directory it can no longer enter, a file it can no longer read.
var forkAttacks = []string{
	"ln -sfn /var/lib/limactl-mcp/agents rooms", "ln -sfn /root rootdir", "ln -sfn . loop",
	"ln /etc/passwd hardpw", "ln a.txt hard-a",
	`python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")'`,
	"mkdir -p locked/in && echo l > locked/in/f && chmod 0 locked", "echo s > su2 && chmod 6755 su2",
	"mkdir -p " + strings.Repeat("deep/", 60) + "end && echo d > " + strings.Repeat("deep/", 60) + "end/f",
}

// The hostile-tree generator against a fork under a network policy: seed after seed, the
// origin's agent makes 2 to 9 attacks in its copy (hostile.Attacks and forkAttacks), then
// the session is forked. Either the fork is an exact copy of what the agent made (every entry,
// mode, size, link target and time, sockets aside, which tar does not copy) and every entry
// of it is the fork's agent user's, or the fork fails, says why, and leaves no session; and
// outside the two copies nothing the test watches changed (a sentinel in the Lima user's
// home, the file a git hook would make).
func TestForkHostileTreesUnderPolicy(t *testing.T) {
	const seeds = 5
	base := project(t, map[string]string{".keep": ""})
	c := hostile.Setup(t, base, false)
	chownToUser(t, base)
	discardSessionOnCleanup(t, c.Host, "hz")
	if out, stderr, code := plugin(t, c.Host, "shell", "--no-review", "--session", "hz", "--network=none", instanceName, "--", "true"); code != 0 {
		t.Fatalf("shell --session hz: exit %d\n%s%s", code, out, stderr)
	}
	sentinel := strings.TrimSpace(guestShell(t, "f=$HOME/fork-sentinel-$$; echo untouched > $f; echo $f"))
	defer guestShell(t, "rm -f "+shq(sentinel))
	mark := "/tmp/fork-hostile-PWNED"
	forked, refused := 0, 0
	for seed := int64(3001); seed < 3001+seeds; seed++ {
		r := rand.New(rand.NewSource(seed))
		var ops []string
		for range 2 + r.Intn(8) {
			op := hostile.Attacks[r.Intn(len(hostile.Attacks))]
			if r.Intn(3) == 0 {
				op = forkAttacks[r.Intn(len(forkAttacks))]
			}
			ops = append(ops, strings.ReplaceAll(op, "MARK", mark))
		}
		what := fmt.Sprintf("seed %d (ops %q)", seed, ops)
		// The ops of earlier seeds stay: the tree grows more hostile seed after seed. A
		// directory or file made unreadable is made readable again first, or every later
		// fork would be refused for it.
		script := "chmod -R u+rwX . 2>/dev/null; { " + strings.Join(ops, "; ") + "; } 2>/dev/null; true"
		if out, stderr, code := plugin(t, c.Host, "shell", "--no-review", "--session", "hz", instanceName, "--", "sh", "-c", script); code != 0 {
			t.Fatalf("%s: the agent's shell: exit %d\n%s%s", what, code, out, stderr)
		}
		name := fmt.Sprintf("hf%d", seed)
		discardSessionOnCleanup(t, c.Host, name)
		out, stderr, code := plugin(t, c.Host, "fork", instanceName, "--session", "hz", name)
		byName := map[string]map[string]any{}
		for _, s := range sessionsOf(t, c.Host) {
			byName[fmt.Sprint(s["session"])] = s
		}
		if code != 0 {
			// Refused: said why, and nothing made.
			refused++
			if !strings.Contains(stderr, "reading ") || !strings.Contains(stderr, "chmod -R u+rwX") || byName[name] != nil {
				t.Errorf("%s: fork: exit %d without a reason, or a session left (%v)\n%s%s", what, code, byName[name] != nil, out, stderr)
			}
			t.Logf("%s: refused: %s", what, strings.TrimSpace(stderr))
			continue
		}
		forked++
		t.Logf("%s: forked", what)
		origin, fork := byName["hz"], byName[name]
		if fork == nil {
			t.Fatalf("%s: fork said it made %s, status does not list it\n%s", what, name, out)
		}
		listing := func(s map[string]any) string {
			return guestShell(t, "sudo sh -c "+shq("cd "+shq(fmt.Sprint(s["guest_path"]))+" && { find . -type d -printf '%y %m %T@ %p\\n'; find . ! -type d ! -type s -printf '%y %m %s %T@ %p -> %l\\n'; } | sort"))
		}
		if a, b := listing(origin), listing(fork); a != b {
			t.Errorf("%s: the fork differs from the origin:\n%s\n---\n%s", what, a, b)
		}
		user := fmt.Sprint(fork["network"].(map[string]any)["user"])
		if owners := guestShell(t, "sudo find "+shq(fmt.Sprint(fork["guest_path"]))+" -printf '%u\\n' | sort -u"); strings.TrimSpace(owners) != user {
			t.Errorf("%s: the fork's copy is owned by %q, want %s alone", what, owners, user)
		}
		if out, stderr, code := plugin(t, c.Host, "discard", "--session", name, instanceName, "--yes"); code != 0 {
			t.Errorf("%s: discard %s: exit %d\n%s%s", what, name, code, out, stderr)
		}
	}
	if got := guestShell(t, "cat "+shq(sentinel)+"; sudo ls "+shq(mark)+" 2>&1 || true"); !strings.HasPrefix(got, "untouched\n") || !strings.Contains(got, "No such file") {
		t.Errorf("outside the copies: %q, want the sentinel untouched and no %s", got, filepath.Base(mark))
	}
	t.Logf("%d seeds: %d forked, %d refused", seeds, forked, refused)
	if forked == 0 {
		t.Errorf("no seed was forked: the generator checked refusals only")
	}
}
