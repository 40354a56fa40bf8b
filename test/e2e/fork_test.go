//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// Best of three on the VM (docs/sessions.md#best-of-n-forks): three forks of a checkpoint of
// the agent's session, three scripted "agents" (shell --no-review in each) making different
// changes, overlapping and not; compare's JSON says where they agree and differ; the review of
// one applies exactly its changes to the host; discard --all-but removes the two others.
func TestForkBestOfThree(t *testing.T) {
	dir := project(t, map[string]string{"main.go": "package main\n", "lib.txt": "l1\nl2\nl3\n", "old.txt": "old\n"})
	discardOnCleanup(t, dir)
	for _, n := range []string{"try1", "try2", "try3"} {
		discardSessionOnCleanup(t, dir, n)
	}
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	shellOK(t, s.Session, dir, "echo '// planned' >> main.go")
	ck := toolsuite.MustOK(t, s.Session, "checkpoint", map[string]any{"label": "plan"}).Structured
	id := fmt.Sprint(ck["id"])
	shellOK(t, s.Session, dir, "echo after > after.txt") // after the checkpoint: not in the forks

	out, stderr, code := plugin(t, dir, "fork", instanceName, "--session", "default@"+id, "try1", "try2", "try3")
	if code != 0 || strings.Count(out, "Forked session try") != 3 {
		t.Fatalf("fork: exit %d\n%s%s", code, out, stderr)
	}
	t.Logf("fork:\n%s", out)
	agent := func(name, script string) {
		t.Helper()
		if out, stderr, code := plugin(t, dir, "shell", "--no-review", "--session", name, instanceName, "--", "sh", "-c", script); code != 0 {
			t.Fatalf("agent in %s: exit %d\n%s%s", name, code, out, stderr)
		}
	}
	agent("try1", "printf 'l1\\nL2\\nl3\\n' > lib.txt && echo one > one.txt")
	agent("try2", "printf 'l1\\nL2\\nl3\\n' > lib.txt && rm old.txt")
	agent("try3", "printf 'l1\\nl2\\nl3\\nl4\\n' > lib.txt && rm old.txt && ls after.txt 2>/dev/null > seen.txt; echo three > three.txt")

	out, stderr, code = plugin(t, dir, "compare", instanceName, "try1", "try2", "try3", "--json")
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s%s", code, out, stderr)
	}
	var cmp struct {
		Files []struct {
			Path     string     `json:"path"`
			Verdict  string     `json:"verdict"`
			Variants [][]string `json:"variants"`
		} `json:"files"`
	}
	mustT(t, json.Unmarshal([]byte(out), &cmp))
	got := map[string]string{}
	for _, f := range cmp.Files {
		got[f.Path] = f.Verdict + fmt.Sprint(f.Variants)
	}
	want := map[string]string{
		"main.go":   "agree[[try1 try2 try3]]", // the checkpoint's edit, in every fork
		"lib.txt":   "differ[[try1 try2] [try3]]",
		"old.txt":   "agree[[try2 try3]]",
		"one.txt":   "only[[try1]]",
		"three.txt": "only[[try3]]",
		"seen.txt":  "only[[try3]]", // empty: after.txt, made after the checkpoint, is not in try3
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("compare:\n got %v\nwant %v\n%s", got, want, out)
	}
	out, _, _ = plugin(t, dir, "compare", instanceName, "try1", "try2", "try3")
	t.Logf("compare:\n%s", out)
	out, _, _ = plugin(t, dir, "status", instanceName)
	if !strings.Contains(out, "[session try2, a fork of default]") || !strings.Contains(out, "forked from: session default at checkpoint "+id) {
		t.Errorf("status:\n%s", out)
	}

	// try3 is kept: its review applies exactly its changes.
	if out, stderr, code := plugin(t, dir, "review", "--session", "try3", instanceName, "--yes"); code != 0 {
		t.Fatalf("review try3: exit %d\n%s%s", code, out, stderr)
	}
	for p, want := range map[string]string{"lib.txt": "l1\nl2\nl3\nl4\n", "three.txt": "three\n", "main.go": "package main\n// planned\n", "seen.txt": ""} {
		if got := readHost(t, filepath.Join(dir, p)); got != want {
			t.Errorf("host %s = %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"old.txt", "one.txt", "after.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("host %s: %v, want it absent", p, err)
		}
	}
	out, stderr, code = plugin(t, dir, "discard", instanceName, "--all-but", "try3", "--yes")
	if code != 0 || !strings.Contains(out, "Discarded session try1") || !strings.Contains(out, "Discarded session try2") {
		t.Errorf("discard --all-but: exit %d\n%s%s", code, out, stderr)
	}
	var names []string
	for _, s := range sessionsOf(t, dir) {
		names = append(names, fmt.Sprint(s["session"]))
	}
	if fmt.Sprint(names) != "[<nil> try3]" {
		t.Errorf("sessions left: %v", names)
	}
}

// A session under a network policy forks into sessions of their own agent users, under the same
// policy: each fork's copy is an exact copy (compare says every path agrees), owned by its own
// agent user, who cannot read the origin's copy nor the other fork's; the origin's agent's
// links are copied as links (never followed); a fork at a checkpoint holds the checkpoint's
// state and no checkpoint of its own; a fork's review applies the origin's changes and its own.
func TestForkUnderNetworkPolicy(t *testing.T) {
	dir := project(t, map[string]string{"main.txt": "one\n", "sub/keep.txt": "keep\n", "run.sh": "#!/bin/sh\n", "gone.txt": "gone\n"})
	for _, name := range []string{"pol", "pf1", "pf2", "pc1"} {
		discardSessionOnCleanup(t, dir, name)
	}
	origin := "echo two > main.txt && rm gone.txt && chmod 755 run.sh && mkdir -p deep/er && echo deep > deep/er/d.txt && " +
		"chmod 600 sub/keep.txt && ln -s /etc/shadow shadow-link && ln -s ../main.txt deep/up && " +
		"echo before > stamp.txt && touch -d '2001-02-03 04:05:06' stamp.txt && touch -d '2001-02-03 04:05:06' deep"
	if out, stderr, code := plugin(t, dir, "shell", "--no-review", "--session", "pol", "--network=none", instanceName, "--", "sh", "-c", origin); code != 0 {
		t.Fatalf("shell --session pol: exit %d\n%s%s", code, out, stderr)
	}
	// A checkpoint of that state, then more changes after it.
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", "--session", "pol", instanceName)
	ck := toolsuite.MustOK(t, s.Session, "checkpoint", map[string]any{"label": "before-later"}).Structured
	id := fmt.Sprint(ck["id"])
	shellOK(t, s.Session, dir, "echo later > later.txt && echo three > main.txt && rm sub/keep.txt")
	_ = s.Session.Close()

	out, stderr, code := plugin(t, dir, "fork", instanceName, "--session", "pol@"+id, "pc1")
	if code != 0 || !strings.Contains(out, "Forked session pc1") {
		t.Fatalf("fork --session pol@%s pc1: exit %d\n%s%s", id, code, out, stderr)
	}
	out, stderr, code = plugin(t, dir, "fork", instanceName, "--session", "pol", "pf1", "pf2")
	if code != 0 || strings.Count(out, "Forked session pf") != 2 {
		t.Fatalf("fork --session pol pf1 pf2: exit %d\n%s%s", code, out, stderr)
	}
	t.Logf("fork:\n%s", out)

	byName := map[string]map[string]any{}
	for _, s := range sessionsOf(t, dir) {
		byName[fmt.Sprint(s["session"])] = s
	}
	users := map[string]string{}
	paths := map[string]string{}
	for _, n := range []string{"pol", "pf1", "pf2", "pc1"} {
		s := byName[n]
		if s == nil {
			t.Fatalf("status has no session %s: %v", n, byName)
		}
		nw, _ := s["network"].(map[string]any)
		if nw["policy"] != "none" || !strings.HasPrefix(fmt.Sprint(nw["user"]), "lmcp-") {
			t.Errorf("session %s: network %v, want policy none and an agent user of its own", n, nw)
		}
		users[n], paths[n] = fmt.Sprint(nw["user"]), fmt.Sprint(s["guest_path"])
	}
	if len(slices.Compact(slices.Sorted(maps.Values(users)))) != 4 || len(slices.Compact(slices.Sorted(maps.Values(paths)))) != 4 {
		t.Fatalf("forks share a user or a copy: users %v, copies %v", users, paths)
	}
	// The fork at the checkpoint holds the checkpoint's state, and none of the origin's
	// checkpoints.
	if got := guestShell(t, "sudo sh -c "+shq("cd "+shq(paths["pc1"])+" && cat main.txt sub/keep.txt && { ls later.txt 2>&1 || true; }")); !strings.Contains(got, "two\nkeep\n") || !strings.Contains(got, "No such file") {
		t.Errorf("pc1's copy: %q, want the checkpoint's main.txt and sub/keep.txt and no later.txt", got)
	}
	if n := len(byName["pc1"]["checkpoints"].([]any)); n != 0 || len(byName["pol"]["checkpoints"].([]any)) == 0 {
		t.Errorf("checkpoints: pc1 has %d, pol %v; want none for the fork and pol's own", n, byName["pol"]["checkpoints"])
	}
	if fk, _ := byName["pf1"]["fork"].(map[string]any); fk == nil || fk["session"] != "pol" {
		t.Errorf("status of pf1: fork %v, want forked from pol", byName["pf1"]["fork"])
	}

	// The copies, as the guest's root sees them: the same entries, modes, link targets and
	// times, each owned by its own agent user (nothing else).
	listing := func(n string) string {
		return guestShell(t, "sudo sh -c "+shq("cd "+shq(paths[n])+" && { find . -type d -printf '%y %m %T@ %p\\n'; find . ! -type d -printf '%y %m %s %T@ %p -> %l\\n'; } | sort"))
	}
	if a, b := listing("pol"), listing("pf1"); a != b {
		t.Errorf("pf1's copy differs from pol's:\n%s\n---\n%s", a, b)
	}
	for _, n := range []string{"pf1", "pf2", "pc1"} {
		if owners := guestShell(t, "sudo find "+shq(paths[n])+" -printf '%u\\n' | sort -u"); strings.TrimSpace(owners) != users[n] {
			t.Errorf("%s's copy is owned by %q, want %s alone", n, owners, users[n])
		}
	}
	if got := guestShell(t, "sudo readlink "+shq(paths["pf1"]+"/shadow-link")); strings.TrimSpace(got) != "/etc/shadow" {
		t.Errorf("pf1's shadow-link = %q, want the link itself, copied", got)
	}
	// The rooms: a fork's agent reads neither the origin's copy nor the other fork's.
	for _, other := range []string{"pol", "pf2"} {
		script := "cat " + shq(paths[other]+"/main.txt") + " && echo READ"
		out, _, _ := plugin(t, dir, "shell", "--no-review", "--session", "pf1", instanceName, "--", "sh", "-c", script)
		if strings.Contains(out, "READ") {
			t.Errorf("pf1's agent read %s's copy:\n%s", other, out)
		}
	}
	// compare: every path agrees before the forks' agents act.
	out, stderr, code = plugin(t, dir, "compare", instanceName, "pol", "pf1", "pf2", "--json")
	var cmp struct {
		Files []struct {
			Path    string `json:"path"`
			Verdict string `json:"verdict"`
		} `json:"files"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &cmp) != nil || len(cmp.Files) < 5 {
		t.Fatalf("compare pol pf1 pf2: exit %d\n%s%s", code, out, stderr)
	}
	for _, f := range cmp.Files {
		if f.Verdict != "agree" {
			t.Errorf("compare: %s is %s, want agree (a fork is an exact copy)", f.Path, f.Verdict)
		}
	}
	// The fork's agent works under the policy, and its review applies the origin's changes
	// and its own.
	if out, stderr, code := plugin(t, dir, "shell", "--no-review", "--session", "pf1", instanceName, "--", "sh", "-c",
		"rm shadow-link && echo mine > pf1.txt && (curl -sS -m 5 http://host.lima.internal:9 >/dev/null 2>&1 && echo NET-OPEN || echo NET-CLOSED)"); code != 0 || !strings.Contains(out, "NET-CLOSED") {
		t.Errorf("pf1's agent under none: exit %d, want its network closed\n%s%s", code, out, stderr)
	}
	if out, stderr, code := plugin(t, dir, "review", "--session", "pf1", instanceName, "--yes"); code != 0 {
		t.Fatalf("review pf1 --yes: exit %d\n%s%s", code, out, stderr)
	}
	for p, want := range map[string]string{"main.txt": "three\n", "later.txt": "later\n", "pf1.txt": "mine\n", "deep/er/d.txt": "deep\n", "stamp.txt": "before\n"} {
		if got := readHost(t, filepath.Join(dir, p)); got != want {
			t.Errorf("host %s after pf1's review = %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"gone.txt", "sub/keep.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("host %s after pf1's review: %v, want it removed", p, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("host run.sh after pf1's review: %v %v, want mode 755", fi, err)
	}
}

// TestBenchmarkFork measures `limactl mcp fork` (the whole process) of a 10,000-file / 100 MB
// staged tree (the staging benchmark's) that has a checkpoint, and the guest disk each fork
// adds. Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -run TestBenchmarkFork ./test/e2e/
//
// It never asserts on times. Results are in docs/benchmarks.md.
func TestBenchmarkFork(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the fork benchmark")
	}
	dir := benchTree10k(t)
	discardOnCleanup(t, dir)
	const runs = 3
	for i := range runs {
		discardSessionOnCleanup(t, dir, fmt.Sprintf("bench%d", i))
	}
	// Staging 100 MB and the first checkpoint (every file copied into the store) take minutes
	// on a loaded emulated guest: longer than a tool call's usual bound.
	call := func(s *server, name string, args map[string]any) map[string]any {
		t.Helper()
		r, problem := callChecked(ctxT(t, 20*time.Minute), s.Session, name, args)
		if problem != "" {
			t.Fatalf("%s: %s", name, problem)
		}
		return r
	}
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	call(s, "list_directory", map[string]any{"path": dir})
	call(s, "checkpoint", map[string]any{"label": "first"})
	used := func() int64 {
		t.Helper()
		n, err := strconv.ParseInt(strings.TrimSpace(guestShell(t, "sync; df -B1 --output=used ~ | tail -1")), 10, 64)
		mustT(t, err)
		return n
	}
	fsType := strings.TrimSpace(guestShell(t, "df --output=fstype ~ | tail -1"))
	var times []time.Duration
	var disk []int64
	for i := range runs {
		before := used()
		t0 := time.Now()
		out, stderr, code := plugin(t, dir, "fork", instanceName, fmt.Sprintf("bench%d", i))
		d := time.Since(t0)
		if code != 0 {
			t.Fatalf("fork: exit %d\n%s%s", code, out, stderr)
		}
		times = append(times, d)
		disk = append(disk, used()-before)
		t.Logf("fork %d: %v, %d bytes of guest disk\n%s", i, d, disk[i], out)
	}
	// The fork's first checkpoint: its content is in the store already (shared objects).
	fs := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--session", "bench0")
	call(fs, "list_directory", map[string]any{"path": dir})
	t0 := time.Now()
	r := call(fs, "checkpoint", map[string]any{"label": "first of the fork"})
	firstCk := time.Since(t0)
	var b strings.Builder
	fmt.Fprintf(&b, "\nFork of a 10,000-file / 100 MB staged tree with one checkpoint (%s; guest filesystem %s), %d forks, `limactl mcp fork` as a whole process:\n\n", machine(t), fsType, runs)
	fmt.Fprintf(&b, "| measure | median | p100 |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| `limactl mcp fork` (one new session) | %s | %s |\n", ms(pct(times, 50)), ms(pct(times, 100)))
	slices.Sort(disk)
	fmt.Fprintf(&b, "| guest disk added by a fork | %.1f MB | %.1f MB |\n", float64(disk[len(disk)/2])/1e6, float64(disk[len(disk)-1])/1e6)
	fmt.Fprintf(&b, "| the fork's first checkpoint (MCP call; stored %v bytes) | %s | %s |\n", r["stored_bytes"], ms(firstCk), ms(firstCk))
	fmt.Print(b.String())
}

// TestBenchmarkForkUnderPolicy is TestBenchmarkFork for a session under `--network=none`: the
// copy goes from its agent user to the fork's (a tar made as one, extracted as the other), after
// the fork's agent user is set up. Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -run TestBenchmarkForkUnderPolicy ./test/e2e/
//
// It never asserts on times. Results are in docs/benchmarks.md.
func TestBenchmarkForkUnderPolicy(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the fork benchmark")
	}
	dir := benchTree10k(t)
	const runs = 3
	discardSessionOnCleanup(t, dir, "pb")
	for i := range runs {
		discardSessionOnCleanup(t, dir, fmt.Sprintf("pbf%d", i))
	}
	if out, stderr, code := plugin(t, dir, "shell", "--no-review", "--session", "pb", "--network=none", instanceName, "--", "true"); code != 0 {
		t.Fatalf("shell --session pb --network=none: exit %d\n%s%s", code, out, stderr)
	}
	used := func() int64 {
		t.Helper()
		n, err := strconv.ParseInt(strings.TrimSpace(guestShell(t, "sync; df -B1 --output=used / | tail -1")), 10, 64)
		mustT(t, err)
		return n
	}
	var times []time.Duration
	var disk []int64
	for i := range runs {
		before := used()
		t0 := time.Now()
		out, stderr, code := plugin(t, dir, "fork", instanceName, "--session", "pb", fmt.Sprintf("pbf%d", i))
		d := time.Since(t0)
		if code != 0 {
			t.Fatalf("fork: exit %d\n%s%s", code, out, stderr)
		}
		times = append(times, d)
		disk = append(disk, used()-before)
		t.Logf("fork %d: %v, %d bytes of guest disk\n%s", i, d, disk[i], out)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nFork of a 10,000-file / 100 MB staged tree under `--network=none` (%s), %d forks, `limactl mcp fork` as a whole process:\n\n", machine(t), runs)
	fmt.Fprintf(&b, "| measure | median | p100 |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| `limactl mcp fork --session pb NEW` (one new session, its agent user set up) | %s | %s |\n", ms(pct(times, 50)), ms(pct(times, 100)))
	slices.Sort(disk)
	fmt.Fprintf(&b, "| guest disk added by a fork | %.1f MB | %.1f MB |\n", float64(disk[len(disk)/2])/1e6, float64(disk[len(disk)-1])/1e6)
	fmt.Print(b.String())
}
