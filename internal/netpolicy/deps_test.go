package netpolicy

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/limactl-mcp/limactl-mcp/"

func goList(t *testing.T, goos string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Env = append(cmd.Environ(), "GOOS="+goos)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s (GOOS=%s): %v", strings.Join(args, " "), goos, err)
	}
	return strings.Fields(string(out))
}

// The host binary links the policy's vocabulary, never the code that enforces it in the guest
// (the proxy, the firewall, the agent user): that is the runner's alone.
func TestHostLinksNoEnforcement(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		deps := goList(t, goos, "-deps", module+"cmd/limactl-mcp")
		linked := false
		for _, p := range deps {
			if strings.HasPrefix(p, module+"internal/netpolicy/") {
				t.Errorf("GOOS=%s: the host binary links %s", goos, p)
			}
			linked = linked || p == module+"internal/netpolicy"
		}
		if !linked {
			t.Errorf("GOOS=%s: the host binary no longer links %snetpolicy: is this test still looking at the right binary?", goos, module+"internal/")
		}
	}
	// And the vocabulary itself opens no socket and runs no tool.
	for _, imp := range goList(t, "linux", "-f", `{{join .Imports " "}}`, module+"internal/netpolicy") {
		switch imp {
		case "net", "net/http", "os/exec", "syscall", "golang.org/x/sys/unix":
			t.Errorf("internal/netpolicy imports %s: enforcement belongs in internal/netpolicy/enforce", imp)
		}
	}
}

// The runner links the enforcement (its `net` subcommands run it).
func TestRunnerLinksEnforcement(t *testing.T) {
	for _, p := range goList(t, "linux", "-deps", module+"cmd/limactl-mcp-runner") {
		if p == module+"internal/netpolicy/enforce" {
			return
		}
	}
	t.Fatal("the runner does not link internal/netpolicy/enforce")
}
