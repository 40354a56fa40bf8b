//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Two agents on one project, each on a session of its own (docs/sessions.md): they change the
// same file differently; the person reviews session alpha and applies it, then session beta's
// review shows that file as a conflict (alpha's apply is a host edit to beta); status lists
// both; a sync brings host edits into one; discarding one leaves the other working.
func TestSessionsTwoAgents(t *testing.T) {
	dir := project(t, map[string]string{"shared.txt": "one\n", "other.txt": "x\n"})
	discardSessionOnCleanup(t, dir, "alpha") // when a step fails before the end discards them
	discardSessionOnCleanup(t, dir, "beta")
	alpha := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--session", "alpha")
	beta := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--session", "beta")
	if got := alpha.Session.InitializeResult().Instructions; !strings.Contains(got, "Session: alpha") {
		t.Errorf("alpha's instructions do not name its session: %q", got)
	}

	// Each agent sees the host's path (its copy is elsewhere in the guest; the tools
	// translate), and its own copy.
	if out := strings.TrimSpace(shellOK(t, alpha.Session, dir, "echo A > shared.txt && pwd")); out != dir {
		t.Errorf("alpha's pwd = %q, want the host's path %s", out, dir)
	}
	shellOK(t, beta.Session, dir, "echo B > shared.txt && echo new > b-only.txt")
	if out := shellOK(t, alpha.Session, dir, "cat shared.txt; ls"); out != "A\nother.txt\nshared.txt\n" {
		t.Errorf("alpha sees beta's work: %q", out)
	}

	// status lists both sessions of the directory, at different guest paths.
	sessions := sessionsOf(t, dir)
	if len(sessions) != 2 || sessions[0]["session"] != "alpha" || sessions[1]["session"] != "beta" {
		t.Fatalf("status --json: %v", sessions)
	}
	if sessions[0]["guest_path"] == sessions[1]["guest_path"] || sessions[0]["guest_path"] == dir {
		t.Errorf("guest paths: %v and %v", sessions[0]["guest_path"], sessions[1]["guest_path"])
	}
	if sessions[0]["pending_total"] != 1.0 || sessions[1]["pending_total"] != 2.0 {
		t.Errorf("pending: %v and %v", sessions[0]["pending_total"], sessions[1]["pending_total"])
	}
	out, stderr, code := plugin(t, dir, "status", instanceName)
	if code != 0 || !strings.Contains(out, dir+"  [session alpha]") || !strings.Contains(out, "review "+instanceName+" --session beta") {
		t.Errorf("status: exit %d\n%s%s", code, out, stderr)
	}

	// Review alpha: its change reaches the host.
	if out, stderr, code := plugin(t, dir, "review", "--session", "alpha", instanceName, "--yes"); code != 0 {
		t.Fatalf("review alpha: exit %d\n%s%s", code, out, stderr)
	}
	if got := readHost(t, filepath.Join(dir, "shared.txt")); got != "A\n" {
		t.Fatalf("after alpha's review, shared.txt = %q", got)
	}
	// Beta's review: shared.txt is a conflict (the host changed it since beta staged it),
	// b-only.txt is not.
	out, stderr, code = plugin(t, dir, "review", "--session", "beta", instanceName, "--json")
	if code != 0 {
		t.Fatalf("review beta --json: exit %d\n%s%s", code, out, stderr)
	}
	var cs struct {
		Items []struct {
			Path     string `json:"path"`
			Conflict bool   `json:"conflict"`
		} `json:"items"`
	}
	mustT(t, json.Unmarshal([]byte(out), &cs))
	conflicts := map[string]bool{}
	for _, it := range cs.Items {
		conflicts[it.Path] = it.Conflict
	}
	if len(cs.Items) != 2 || !conflicts["shared.txt"] || conflicts["b-only.txt"] {
		t.Errorf("beta's changeset: %s", out)
	}
	out, stderr, code = plugin(t, dir, "review", "--session", "beta", instanceName, "--yes")
	if code != 0 || !strings.Contains(out, "shared.txt") {
		t.Fatalf("review beta --yes: exit %d\n%s%s", code, out, stderr)
	}
	if got := readHost(t, filepath.Join(dir, "shared.txt")); got != "A\n" {
		t.Errorf("beta's --yes overwrote the conflict: shared.txt = %q", got)
	}
	if got := readHost(t, filepath.Join(dir, "b-only.txt")); got != "new\n" {
		t.Errorf("b-only.txt = %q", got)
	}

	// A host edit reaches beta's copy with sync --session beta; alpha's copy stays as it was.
	mustT(t, os.WriteFile(filepath.Join(dir, "other.txt"), []byte("y\n"), 0o644))
	if out, stderr, code := plugin(t, dir, "sync", "--session", "beta", instanceName); code != 0 {
		t.Fatalf("sync beta: exit %d\n%s%s", code, out, stderr)
	}
	if got := shellOK(t, beta.Session, dir, "cat other.txt"); got != "y\n" {
		t.Errorf("beta's other.txt after sync = %q", got)
	}
	if got := shellOK(t, alpha.Session, dir, "cat other.txt"); got != "x\n" {
		t.Errorf("alpha's other.txt after beta's sync = %q", got)
	}

	// A session that does not exist: the error names the ones that do.
	if _, stderr, code := plugin(t, dir, "review", "--session", "gamma", instanceName, "--yes"); code == 0 || !strings.Contains(stderr, "its sessions there: alpha, beta") {
		t.Errorf("review of a missing session: exit %d: %s", code, stderr)
	}

	// Discard alpha: beta stays, and its agent works on.
	if out, stderr, code := plugin(t, dir, "discard", "--session", "alpha", instanceName, "--yes"); code != 0 {
		t.Fatalf("discard alpha: exit %d\n%s%s", code, out, stderr)
	}
	if s := sessionsOf(t, dir); len(s) != 1 || s[0]["session"] != "beta" {
		t.Errorf("after discarding alpha, status: %v", s)
	}
	if got := shellOK(t, beta.Session, dir, "cat shared.txt"); got != "B\n" {
		t.Errorf("beta's shared.txt after alpha's discard = %q", got)
	}
	// `shell --session beta` runs on beta's copy, at its guest path.
	out, stderr, code = plugin(t, dir, "shell", "--session", "beta", "--no-review", instanceName, "--", "cat", "shared.txt")
	if code != 0 || out != "B\n" {
		t.Errorf("shell --session beta: exit %d: %q\n%s", code, out, stderr)
	}
	if out, stderr, code := plugin(t, dir, "discard", "--session", "beta", instanceName, "--yes"); code != 0 {
		t.Errorf("discard beta: exit %d\n%s%s", code, out, stderr)
	}
}

// A named session under a network policy works as its own agent user, with its copy in that
// user's home, while the directory's unnamed session stays open, the Lima user's, at the
// host's path; the agent of each sees the host's path.
func TestSessionsUnderNetworkPolicy(t *testing.T) {
	dir := project(t, map[string]string{"main.txt": "one\n"})
	discardSessionOnCleanup(t, dir, "")
	discardSessionOnCleanup(t, dir, "net")
	open := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	closed := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--session", "net", "--network=none")
	id := staging.SessionIDOf(dir, "net")

	if out := shellOK(t, closed.Session, dir, "id -un; pwd; echo net > main.txt"); out != staging.AgentUser(id)+"\n"+dir+"\n" {
		t.Errorf("the named session under a policy: %q, want its agent user %s in %s", out, staging.AgentUser(id), dir)
	}
	if out := shellOK(t, open.Session, dir, "id -un; pwd; cat main.txt"); strings.HasPrefix(out, "lmcp-") || !strings.HasSuffix(out, "\n"+dir+"\none\n") {
		t.Errorf("the unnamed open session: %q", out)
	}
	sessions := sessionsOf(t, dir)
	if len(sessions) != 2 || sessions[0]["guest_path"] != dir || sessions[1]["session"] != "net" {
		t.Fatalf("status --json: %v", sessions)
	}
	if gp, _ := sessions[1]["guest_path"].(string); !strings.HasPrefix(gp, staging.AgentHome(id)+"/") {
		t.Errorf("the named session's copy is at %s, not in its agent user's home %s", gp, staging.AgentHome(id))
	}
	if nw, _ := sessions[1]["network"].(map[string]any); nw["policy"] != "none" || nw["user"] != staging.AgentUser(id) {
		t.Errorf("the named session's network: %v", sessions[1]["network"])
	}
	// A second session under a policy: status reads both agents' records with one sudo (`net
	// report --users`) and each copy through a runner started as its agent alone; each gets its
	// own pending changes and record, never the other's.
	discardSessionOnCleanup(t, dir, "net2")
	other := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--session", "net2", "--network=none")
	id2 := staging.SessionIDOf(dir, "net2")
	shellOK(t, other.Session, dir, "echo new > added.txt")
	sessions = sessionsOf(t, dir)
	if len(sessions) != 3 {
		t.Fatalf("status --json with a second session under a policy: %v", sessions)
	}
	for i, want := range []struct {
		id, kind string
	}{{id, "modified"}, {id2, "added"}} {
		s := sessions[i+1]
		pending, _ := s["pending"].(map[string]any)
		if s["error"] != nil || s["pending_total"] != float64(1) || pending[want.kind] != float64(1) {
			t.Errorf("status --json of session %v: pending %v (total %v), error %v; want one %s", s["session"], s["pending"], s["pending_total"], s["error"], want.kind)
		}
		nw, _ := s["network"].(map[string]any)
		changes, _ := nw["changes"].([]any)
		if nw["user"] != staging.AgentUser(want.id) || nw["error"] != nil || nw["source"] == nil || len(changes) == 0 {
			t.Errorf("status --json of session %v: network %v, want %s's record", s["session"], nw, staging.AgentUser(want.id))
		}
	}
	if out, stderr, code := plugin(t, dir, "review", "--session", "net", instanceName, "--yes"); code != 0 || readHost(t, filepath.Join(dir, "main.txt")) != "net\n" {
		t.Errorf("review --session net: exit %d\n%s%s", code, out, stderr)
	}
	// A review reads the session through a runner started as its agent alone: `review --json`
	// never sets the agent up (seconds on an emulated guest); the terminal's review sets it up
	// beside the reading, for its apply, and applies through it.
	jsonCmd := vm.Command(ctxT(t, 5*time.Minute), "limactl-mcp", "review", instanceName, "--session", "net2", "--json")
	jsonCmd.Dir, jsonCmd.Env = dir, append(jsonCmd.Env, "LIMACTL_MCP_DEBUG=1")
	out, stderr, err := runCmd(jsonCmd)
	if err != nil || !strings.Contains(out, `"added.txt"`) || !strings.Contains(stderr, "runner started as the agent user (reading only)") || strings.Contains(stderr, "agent user set up") {
		t.Errorf("review --session net2 --json with LIMACTL_MCP_DEBUG=1: %v, want added.txt read by the agent's runner alone, no set-up\n%s\n%s", err, out, stderr)
	}
	r := startTmuxReview(t, dir, "--session", "net2")
	r.waitFor("1 file changed", "added.txt")
	r.keys("Enter")
	r.waitFor("Apply these changes?", "added.txt")
	r.keys("y")
	r.waitFor("Applied: 1 path written", "EXIT=0")
	if got := readHost(t, filepath.Join(dir, "added.txt")); got != "new\n" {
		t.Errorf("added.txt on the host after the terminal's review of session net2: %q", got)
	}
	if out, stderr, code := plugin(t, dir, "discard", "--session", "net", instanceName, "--yes"); code != 0 {
		t.Errorf("discard --session net: exit %d\n%s%s", code, out, stderr)
	}
	if out := shellOK(t, open.Session, dir, "cat main.txt"); out != "one\n" {
		t.Errorf("the unnamed session's copy after the named one's discard: %q", out)
	}
}

// discardSessionOnCleanup discards the session called name of dir when the test ends
// (ignoring "no session": the test may have discarded it itself).
func discardSessionOnCleanup(t *testing.T, dir, name string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := vm.Command(ctx, ourBin, "discard", "--session", staging.SessionLabel(name), instanceName, "--yes")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "has no staged session") {
			t.Logf("discarding session %s of %s: %v\n%s", staging.SessionLabel(name), dir, err, out)
		}
	})
}

// sessionsOf is status --json's sessions of dir, in status's order.
func sessionsOf(t *testing.T, dir string) []map[string]any {
	t.Helper()
	out, stderr, code := plugin(t, dir, "status", instanceName, "--json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	var st struct {
		Sessions []map[string]any `json:"sessions"`
	}
	mustT(t, json.Unmarshal([]byte(out), &st))
	var mine []map[string]any
	for _, s := range st.Sessions {
		if s["workdir"] == dir {
			mine = append(mine, s)
		}
	}
	return mine
}

// A compare of two sessions under a network policy reads each through a runner started as
// its agent alone, never setting an agent up (`compare --json`); `review --compare` in a
// terminal reads the same way and applies the picks through the first session's own
// connection, whose agent it sets up while the person picks.
func TestCompareUnderNetworkPolicy(t *testing.T) {
	dir := project(t, map[string]string{"main.txt": "one\n"})
	for _, name := range []string{"c1", "c2"} {
		discardSessionOnCleanup(t, dir, name)
	}
	for name, script := range map[string]string{"c1": "echo from-c1 > c1.txt", "c2": "echo from-c2 > c2.txt; echo two > main.txt"} {
		if out, stderr, code := plugin(t, dir, "shell", "--no-review", "--session", name, "--network=none", instanceName, "--", "sh", "-c", script); code != 0 {
			t.Fatalf("shell --session %s: exit %d\n%s%s", name, code, out, stderr)
		}
	}
	cmd := vm.Command(ctxT(t, 5*time.Minute), "limactl-mcp", "compare", instanceName, "c1", "c2", "--json")
	cmd.Dir, cmd.Env = dir, append(cmd.Env, "LIMACTL_MCP_DEBUG=1")
	out, stderr, err := runCmd(cmd)
	if err != nil || !strings.Contains(out, `"c1.txt"`) || !strings.Contains(out, `"c2.txt"`) || !strings.Contains(out, `"main.txt"`) ||
		strings.Count(stderr, "runner started as the agent user (reading only)") != 2 || strings.Contains(stderr, "agent user set up") {
		t.Errorf("compare c1 c2 --json with LIMACTL_MCP_DEBUG=1: %v, want the three files read by each agent's runner alone, no set-up\n%s\n%s", err, out, stderr)
	}
	r := startTmuxReview(t, dir, "--compare", "c1,c2")
	for i, p := range []string{"c1.txt", "c2.txt", "main.txt"} { // each changed by one session, whose version is taken
		r.waitFor(fmt.Sprintf("[%d/3] %s · compare", i+1, p))
		r.keys("Enter")
	}
	r.waitFor("Apply these changes?")
	r.keys("y")
	r.waitFor("Applied: 3 paths written on the host, through session c1", "EXIT=0")
	for p, want := range map[string]string{"c1.txt": "from-c1\n", "c2.txt": "from-c2\n", "main.txt": "two\n"} {
		if got := readHost(t, filepath.Join(dir, p)); got != want {
			t.Errorf("host %s after review --compare = %q, want %q", p, got, want)
		}
	}
	// A discard counts what is lost and ends the agent's background processes the same way,
	// then releases the agent: it never sets the agent up first.
	cmd = vm.Command(ctxT(t, 5*time.Minute), "limactl-mcp", "discard", "--session", "c2", instanceName, "--yes")
	cmd.Dir, cmd.Env = dir, append(cmd.Env, "LIMACTL_MCP_DEBUG=1")
	out, stderr, err = runCmd(cmd)
	if err != nil || !strings.Contains(out, "Discarded the staged copy of "+dir+" (session c2)") || !strings.Contains(stderr, "runner started as the agent user (reading only)") || strings.Contains(stderr, "agent user set up") {
		t.Errorf("discard --session c2 with LIMACTL_MCP_DEBUG=1: %v, want it discarded through the agent's runner alone, no set-up\n%s\n%s", err, out, stderr)
	}
	for _, s := range sessionsOf(t, dir) {
		if s["session"] == "c2" {
			t.Errorf("session c2 is still listed after its discard: %v", s)
		}
	}
}
