//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// configure --create makes a sandbox instance (no host mounts) for the agent and configures
// the agent for it: the "two commands" of the quick start.
func TestConfigureCreatesSandbox(t *testing.T) {
	dir := project(t, map[string]string{"main.go": "package main\n"})
	const name = "mcp-e2e-created"
	// Without --create: a clear error naming the command to create it.
	_, stderr, code := plugin(t, dir, "configure", "claude", "--instance", name)
	if code == 0 || !strings.Contains(stderr, "limactl start --mount-none --name="+name) || !strings.Contains(stderr, "`limactl mcp configure claude --instance "+name+" --create`") || !strings.Contains(stderr, "nothing was written") {
		t.Errorf("configure for a missing instance: exit %d: %s", code, stderr)
	}
	// ... said before anything is written, in a dry run too.
	if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); !os.IsNotExist(err) {
		t.Errorf("configure for a missing instance wrote .mcp.json: %v", err)
	}
	if _, stderr, code := plugin(t, dir, "configure", "claude", "--instance", name, "--dry-run"); code == 0 || !strings.Contains(stderr, "nothing was written") {
		t.Errorf("configure --dry-run for a missing instance: exit %d: %s", code, stderr)
	}
	tmpl, err := vm.Template()
	mustT(t, err)
	t.Cleanup(func() {
		out, err := vm.Limactl(ctxT(t, 3*time.Minute), "delete", "--force", name)
		if err != nil {
			t.Logf("deleting %s: %v\n%s", name, err, out)
		}
	})
	out, stderr, code := plugin(t, dir, "configure", "claude", "--instance", name, "--create", "--template", tmpl)
	if code != 0 || !strings.Contains(out, "Ready") {
		t.Fatalf("configure --create: exit %d\n%s\n%s", code, out, stderr)
	}
	list, err := vm.Limactl(ctxT(t, time.Minute), "list", "--json", name)
	mustT(t, err)
	var inst struct {
		Status string `json:"status"`
		Config struct {
			Mounts []any `json:"mounts"`
		} `json:"config"`
	}
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, "{") {
			mustT(t, json.Unmarshal([]byte(line), &inst))
			break
		}
	}
	if inst.Status != "Running" || len(inst.Config.Mounts) != 0 {
		t.Errorf("created instance: %+v", inst)
	}
	data, err := os.ReadFile(filepath.Join(dir, ".mcp.json"))
	mustT(t, err)
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	mustT(t, json.Unmarshal(data, &cfg))
	if s := cfg.MCPServers["lima"]; s.Command != "limactl" || strings.Join(s.Args, " ") != "mcp serve "+name {
		t.Errorf(".mcp.json: %s", data)
	}
	// The agent's server works in the new instance.
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", name)
	if got := shellOK(t, s.Session, dir, "cat main.go"); got != "package main\n" {
		t.Errorf("staged in the new instance: %q", got)
	}
}

// configure refuses an instance with host mounts before writing anything: the agent's tools
// would change the person's files directly and nothing would be reviewable (it used to warn
// and then print "Ready"). The instance is a real one to limactl (`limactl list` shows it,
// stopped), made from a lima.yaml with a mount.
func TestConfigureRefusesMountedInstance(t *testing.T) {
	const name = "mcp-e2e-mounted"
	instDir := filepath.Join(vm.LimaHome, name)
	mustT(t, os.MkdirAll(instDir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(instDir) })
	mustT(t, os.WriteFile(filepath.Join(instDir, "lima.yaml"), []byte("vmType: qemu\nimages:\n- location: /nonexistent.img\nmounts:\n- location: \"~\"\n"), 0o644))
	chownToUser(t, instDir)
	dir := project(t, map[string]string{"main.go": "package main\n"})
	for _, extra := range [][]string{nil, {"--dry-run"}, {"--create"}} {
		args := append([]string{"configure", "claude", "--instance", name}, extra...)
		_, stderr, code := plugin(t, dir, args...)
		if code == 0 || !strings.Contains(stderr, "nothing was written: instance \""+name+"\" mounts host directories") ||
			!strings.Contains(stderr, "`limactl mcp configure claude --instance "+name+"-sandbox --create`") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); !os.IsNotExist(err) {
		t.Errorf("configure for a mounted instance wrote .mcp.json: %v", err)
	}
}
