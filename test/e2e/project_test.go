//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
)

// project creates a host project directory owned by the user that runs limactl (so that
// `serve` can read it and `review` can write it), at a path that the guest can use as is.
// files maps relative paths to contents; a trailing "/" makes an empty directory.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	base := "/home/" + vm.User
	if vm.User == "" {
		home, _ := os.UserHomeDir()
		base = home
	}
	name := strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "-"), "-")
	dir := filepath.Join(base, "mcp-e2e-projects", fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1e9))
	// Made even with no files: a test alone (an opt-in benchmark) is the first to use the base.
	mustT(t, os.MkdirAll(dir, 0o755))
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if strings.HasSuffix(rel, "/") {
			mustT(t, os.MkdirAll(p, 0o755))
			continue
		}
		mustT(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mode := os.FileMode(0o644)
		if strings.HasSuffix(rel, ".sh") {
			mode = 0o755
		}
		mustT(t, os.WriteFile(p, []byte(content), mode))
		mustT(t, os.Chmod(p, mode))
	}
	chownToUser(t, filepath.Dir(dir))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// chownToUser gives dir (recursively) to the unprivileged user.
func chownToUser(t *testing.T, dir string) {
	t.Helper()
	if vm.User == "" {
		return
	}
	u, err := user.Lookup(vm.User)
	mustT(t, err)
	if out, err := exec.Command("chown", "-R", u.Uid+":"+u.Gid, dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
}

func mustT(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// gitInit makes dir a git repository with one commit (as the user that owns it).
func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=e2e", "-c", "user.email=e2e@example.com", "commit", "-qm", "init"}} {
		cmd := vm.Command(ctxT(t, time.Minute), "git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// plugin runs our binary as the user, in dir, and returns stdout, stderr and the exit code.
func plugin(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := vm.Command(ctxT(t, 5*time.Minute), "limactl-mcp", args...)
	cmd.Dir = dir
	stdout, stderr, err := runCmd(cmd)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("limactl-mcp %v: %v", args, err)
	}
	return stdout, stderr, code
}

// statusOf returns `status --json`'s session for dir.
func statusOf(t *testing.T, dir string) map[string]any {
	t.Helper()
	out, stderr, code := plugin(t, dir, "status", instanceName, "--json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	var st struct {
		Sessions []map[string]any `json:"sessions"`
	}
	mustT(t, json.Unmarshal([]byte(out), &st))
	for _, s := range st.Sessions {
		if s["workdir"] == dir {
			return s
		}
	}
	t.Fatalf("status has no session for %s: %s", dir, out)
	return nil
}

// stagedGuestPath is where dir is staged in the guest, "" while it is not (yet).
func stagedGuestPath(t *testing.T, dir string) string {
	t.Helper()
	out, _, code := plugin(t, dir, "status", instanceName, "--json")
	var st struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		return ""
	}
	for _, s := range st.Sessions {
		if s["workdir"] == dir {
			gp, _ := s["guest_path"].(string)
			return gp
		}
	}
	return ""
}

func readHost(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

// rootConn connects this test process to the instance directly, with Lima's key (readable by
// root), for measurements of the engine apart from process start-up.
func rootConn(t *testing.T) *guest.Conn {
	t.Helper()
	return rootConnWith(t, guest.Options{NoLoginShell: true})
}

// rootConnWith is rootConn with opts.
func rootConnWith(t *testing.T, opts guest.Options) *guest.Conn {
	t.Helper()
	out, err := vm.Limactl(ctxT(t, time.Minute), "list", "--format", "{{.SSHLocalPort}}", instanceName)
	mustT(t, err)
	port := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	pem, err := os.ReadFile(filepath.Join(vm.LimaHome, "_config", "user"))
	mustT(t, err)
	signer, err := ssh.ParsePrivateKey(pem)
	mustT(t, err)
	user := vm.User
	if user == "" {
		user = os.Getenv("USER")
	}
	c := guest.New(func(context.Context) (*sshlink.Target, error) {
		return &sshlink.Target{Name: instanceName, Addr: "127.0.0.1:" + port, User: user, Signers: []ssh.Signer{signer}, Arch: "x86_64"}, nil
	}, opts)
	t.Cleanup(func() { c.Close() })
	return c
}
