//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// seqSeedEnv picks TestShellPolicySequence's seed (default: the time; a failure names it).
const seqSeedEnv = "LIMACTL_MCP_POLICY_SEQ_SEED"

// TestShellPolicySequence: every command of `limactl mcp shell --network=P` runs under P from
// the first one on, whatever the session held before — narrower, wider, another identity
// (open, none). A seeded sequence of policies over three host names (and a port rule), each
// command trying all three: exactly those P allows answer. (The first command after a change
// between two allow policies once ran under the session's previous policy: the connection made
// from the stored session was set up instead of the plan's.)
func TestShellPolicySequence(t *testing.T) {
	port := hostServer(t)
	hosts := []string{"pol-a.test", "pol-b.test", "pol-c.test"}
	mapNamesToHost(t, "# limactl-mcp-e2e-policy-seq", hosts...)
	dir := homeWorkdir(t)
	discardOnCleanup(t, dir)

	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seqSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: not a number", seqSeedEnv, v)
		}
		seed = n
	}
	t.Logf("seed %d (%s=%d replays it)", seed, seqSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	p := strconv.Itoa(port)
	pool := []string{
		"allow:pol-a.test,pol-b.test,pol-c.test",
		"allow:pol-a.test",
		"allow:pol-b.test,pol-c.test:" + p,
		"allow:pol-a.test,pol-c.test:1",
		"none",
		"open",
	}
	// Two narrowings between allow policies first (the case that failed), then the seed's.
	seq := []string{pool[0], pool[1]}
	for len(seq) < 7 {
		next := pool[rng.IntN(len(pool))]
		if next != seq[len(seq)-1] {
			seq = append(seq, next)
		}
	}
	script := fmt.Sprintf(`for h in %s; do printf '%%s=' $h; curl -sS --max-time 10 http://$h:%d/ok 2>/dev/null; echo; done`, strings.Join(hosts, " "), port)
	for i, policy := range seq {
		stdout, stderr, code := mcpShell(t, dir, nil, "--network="+policy, "--no-review", instanceName, "--", "sh", "-c", script)
		for _, h := range hosts {
			reached := strings.Contains(stdout, h+"=hello ok")
			if want := policyAllows(policy, h, p); reached != want {
				t.Errorf("step %d (seed %d), after %v: under %s, %s reached=%v, want %v\nexit %d, stdout:\n%s\nstderr:\n%s", i, seed, seq[:i], policy, h, reached, want, code, stdout, stderr)
			}
		}
	}
}

// policyAllows says whether policy (one of TestShellPolicySequence's) lets a command reach
// host on port.
func policyAllows(policy, host, port string) bool {
	switch policy {
	case "open":
		return true
	case "none":
		return false
	}
	entries := strings.Split(strings.TrimPrefix(policy, "allow:"), ",")
	return slices.Contains(entries, host) || slices.Contains(entries, host+":"+port)
}
