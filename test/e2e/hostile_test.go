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

// The generator of hostile trees, a smaller count end to end: each state is made by the agent's
// own tool (run_shell_command through `limactl-mcp serve`) in the real VM, reviewed with the
// real `limactl-mcp review --yes`, and the host invariant checked by walking the host.
func TestHostileTreesEndToEnd(t *testing.T) {
	const states = 8
	checks := 0
	for seed := int64(1001); seed < 1001+states; seed++ {
		r := rand.New(rand.NewSource(seed))
		base := project(t, map[string]string{".keep": ""})
		c := hostile.Setup(t, base, r.Intn(2) == 0)
		chownToUser(t, base)
		ops := hostile.Ops(r, c.Mark)
		what := fmt.Sprintf("seed %d (ops %q)", seed, ops)
		s := startServerIn(t, c.Host, nil, "limactl-mcp", "serve", instanceName)
		shellOK(t, s.Session, c.Host, "{ "+strings.Join(ops, "; ")+"; } 2>/dev/null; true")
		c.Snap(t)
		out, stderr, code := plugin(t, c.Host, "review", instanceName, "--yes")
		if code != 0 && code != 1 {
			t.Fatalf("%s: review --yes: exit %d\n%s\n%s", what, code, out, stderr)
		}
		if code == 1 && !strings.Contains(stderr, "stay pending") {
			t.Errorf("%s: review --yes exited 1 without saying why:\n%s\n%s", what, out, stderr)
		}
		checks += c.Check(t, what)
		_ = s.Session.Close()
		if _, _, code := plugin(t, c.Host, "discard", instanceName, "--yes"); code != 0 {
			t.Errorf("%s: discard: exit %d", what, code)
		}
		if t.Failed() {
			t.Fatalf("%s broke the host invariant in %s", what, filepath.Base(base))
		}
	}
	t.Logf("%d hostile states end to end, %d host checks", states, checks)
}
