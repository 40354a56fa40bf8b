//go:build e2e

package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
)

// agentsDir is where the test puts the agents' programs in the guest (root's, kept across the
// tests of a kept VM: a stamp says which versions are there).
const agentsDir = "/usr/local/lib/limactl-mcp-e2e-agents"

// The real agents run inside the VM with their keys as secrets (issue 25): Claude Code, Codex
// and Gemini CLI, the npm packages install-clients.sh pins (the same binaries as on the host),
// started by `limactl mcp shell --secret NAME` under a network policy, reach a fake provider on
// the host's loopback (through the relay's test hook: there is no internet here) with the real
// key, though the guest holds only the placeholder. Their first requests are enough: the fake
// answers each with a 400, which they give up on. Then Claude Code once more with a
// subscription's token (CLAUDE_CODE_OAUTH_TOKEN) under the network policy open. Claude Code's
// binary needs x86-64-v2, hence the test VM's CPU model (hack/e2e/template.yaml.in).
func TestSecretsRealAgentsInVM(t *testing.T) {
	_, claudeVersion := installedClient(t, agentClients["claude"])
	_, codexVersion := installedClient(t, agentClients["codex"])
	_, geminiVersion := installedClient(t, agentClients["gemini"])
	clients := os.Getenv(clientsDirEnv)
	if clients == "" {
		clients = defaultClientsDir
	}
	claudeDir := filepath.Join(clients, "node_modules/@anthropic-ai/claude-code-linux-x64")
	codexDir := filepath.Join(clients, "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin")
	googleDir := filepath.Join(clients, "node_modules/@google")
	node, err := exec.LookPath("node")
	mustT(t, err)
	node, err = filepath.EvalSymlinks(node)
	mustT(t, err)
	for _, p := range []string{filepath.Join(claudeDir, "claude"), filepath.Join(codexDir, "codex"), filepath.Join(googleDir, "gemini-cli/bundle/gemini.js"), node} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the agent's program is not where install-clients.sh puts it: %v", err)
		}
	}
	stamp := fmt.Sprintf("claude %s, codex %s, gemini %s, node %s", claudeVersion, codexVersion, geminiVersion, node)
	copyAgentsToGuest(t, stamp, claudeDir, codexDir, googleDir, node)

	prov := startAgentsProvider(t, "api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com")
	dir := homeWorkdir(t)
	mustT(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644))
	_ = os.Chown(filepath.Join(dir, "README.md"), vmUID(t), vmGID(t))
	discardOnCleanup(t, dir)
	hook := []string{
		secrets.TestUpstreamEnv + "=api.anthropic.com:443=" + prov.ln.Addr().String() + ",api.openai.com:443=" + prov.ln.Addr().String() + ",generativelanguage.googleapis.com:443=" + prov.ln.Addr().String(),
		secrets.TestCAEnv + "=" + prov.caFile,
	}

	for _, c := range []struct {
		name, secret, value, host, script string
		// sent is what the provider must get, in the header the agent puts its key in.
		header, sent string
		// network is the session's policy (default allow:nothing-else.invalid).
		network string
	}{
		{
			name: "claude", secret: "ANTHROPIC_API_KEY", value: "sk-ant-api03-e2eCLAUDEvalue-0123456789abcdef", host: "api.anthropic.com",
			script: "timeout 240 " + agentsDir + "/claude -p 'say hi' </dev/null",
			header: "X-Api-Key", sent: "sk-ant-api03-e2eCLAUDEvalue-0123456789abcdef",
		},
		{
			name: "codex", secret: "CODEX_API_KEY", value: "sk-proj-e2eCODEXvalue-0123456789abcdef", host: "api.openai.com",
			script: "timeout 240 " + agentsDir + "/codex exec --skip-git-repo-check 'say hi' </dev/null",
			header: "Authorization", sent: "Bearer sk-proj-e2eCODEXvalue-0123456789abcdef",
		},
		{
			name: "gemini", secret: "GEMINI_API_KEY", value: "AIzaE2eGEMINIvalue0123456789abcdefghi", host: "generativelanguage.googleapis.com",
			script: "GEMINI_CLI_TRUST_WORKSPACE=true timeout 240 " + agentsDir + "/node " + agentsDir + "/gemini-cli/bundle/gemini.js -p 'say hi' </dev/null",
			header: "X-Goog-Api-Key", sent: "AIzaE2eGEMINIvalue0123456789abcdefghi",
		},
		{
			// A subscription: the token `claude setup-token` prints on the host after the
			// browser login, kept there, sent by Claude Code as a Bearer token. Under open (no
			// agent user, the command's own proxy: guest/openproxy.go).
			name: "claude-subscription", secret: "CLAUDE_CODE_OAUTH_TOKEN", value: "sk-ant-oat01-e2eCLAUDEoauth-0123456789abcdef", host: "api.anthropic.com",
			script: "timeout 240 " + agentsDir + "/claude -p 'say hi' </dev/null",
			header: "Authorization", sent: "Bearer sk-ant-oat01-e2eCLAUDEoauth-0123456789abcdef",
			network: "open",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(prov.requests())
			script := `echo "HOLDS=$` + c.secret + `"; ` + c.script + `; echo "AGENT-EXIT=$?"`
			network := c.network
			if network == "" {
				network = "allow:nothing-else.invalid"
			}
			t0 := time.Now()
			stdout, stderr, code := mcpShell(t, dir, append([]string{c.secret + "=" + c.value}, hook...),
				"--network="+network, "--secret", c.secret, "--no-review", instanceName, "--", "sh", "-c", script)
			t.Logf("%s in the guest: exit %d in %s\nstdout:\n%s\nstderr:\n%s", c.name, code, time.Since(t0).Round(time.Second), tailLines(stdout, 15), tailLines(stderr, 15))
			// The second agent's run resumes the session the first one staged: its set-up must
			// still put the bound host on the allowlist (it did not, before).
			if holds := lineWith(stdout, "HOLDS="); !strings.Contains(holds, secrets.PlaceholderMark) {
				t.Errorf("the agent's environment does not hold the placeholder: %q", holds)
			}
			if strings.Contains(stdout+stderr, c.value) {
				t.Errorf("the value reached the agent's output")
			}
			if !strings.Contains(stdout, "AGENT-EXIT=") || strings.Contains(stdout, "AGENT-EXIT=124") || strings.Contains(stdout, "AGENT-EXIT=132") {
				t.Errorf("the agent did not run to its end (timeout 124, SIGILL 132)")
			}
			reqs := prov.requests()[before:]
			withValue := 0
			for _, r := range reqs {
				t.Logf("provider: %s %s %s (%s set: %v)", r.host, r.method, r.path, c.header, r.headers[c.header] != "")
				if r.host != c.host {
					continue
				}
				switch got := r.headers[c.header]; {
				case got == c.sent:
					withValue++
				case got != "":
					t.Errorf("%s got %s %q, not the value", c.host, c.header, got)
				}
			}
			if withValue == 0 {
				t.Errorf("%s never reached %s with the value in %s (%d requests reached the provider)", c.name, c.host, c.header, len(reqs))
			}
		})
	}
	st, _, code := plugin(t, dir, "status", instanceName)
	for _, want := range []string{"ANTHROPIC_API_KEY used", "CODEX_API_KEY used", "GEMINI_API_KEY used", "CLAUDE_CODE_OAUTH_TOKEN used"} {
		if code != 0 || !strings.Contains(st, want) {
			t.Errorf("status does not say %q: %s", want, st)
		}
	}
}

// copyAgentsToGuest puts claude, codex, node and gemini-cli into agentsDir in the guest (about
// 900 MB, through limactl shell), unless the stamp there says they are these already; they are
// removed when the test ends (the test VM's disk is 4 GiB), but from a kept VM.
func copyAgentsToGuest(t *testing.T, stamp, claudeDir, codexDir, googleDir, node string) {
	t.Helper()
	copyToGuest(t, "claude, codex, node and gemini-cli", agentsDir, stamp,
		[]string{"-C", claudeDir, "claude", "-C", codexDir, "codex", "-C", filepath.Dir(node), filepath.Base(node), "-C", googleDir, "gemini-cli"},
		"[ "+shq(filepath.Base(node))+" = node ] || sudo mv \"$new\"/"+shq(filepath.Base(node))+" \"$new\"/node",
		agentsDir+"/node --version; "+agentsDir+"/codex --version; "+agentsDir+"/claude --version")
}

// agentsProvider is a TLS server on the host's loopback answering for several providers' names
// (a CA of its own, in caFile for the relay's test hook): it records each request's key headers
// and answers 400, which the agents do not retry.
type agentsProvider struct {
	ln     net.Listener
	caFile string
	mu     sync.Mutex
	got    []providerRequest
}

type providerRequest struct {
	host, method, path string
	headers            map[string]string
}

func startAgentsProvider(t *testing.T, hosts ...string) *agentsProvider {
	t.Helper()
	ca, err := secrets.OpenCA(t.TempDir(), hosts)
	mustT(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return ca.Leaf(h.ServerName)
		},
	})
	mustT(t, err)
	p := &agentsProvider{ln: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		req := providerRequest{host: strings.ToLower(r.TLS.ServerName), method: r.Method, path: r.URL.Path, headers: map[string]string{}}
		for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
			req.headers[h] = r.Header.Get(h)
		}
		p.mu.Lock()
		p.got = append(p.got, req)
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","code":400,"status":"INVALID_ARGUMENT","message":"the e2e fake provider has no model"}}`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p.caFile = writeHookCA(t, ca.CertPEM())
	return p
}

func (p *agentsProvider) requests() []providerRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]providerRequest(nil), p.got...)
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
