//go:build e2e

package e2e

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
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

	prov := startAgentsProvider(t, "api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "chatgpt.com", "auth.openai.com",
		"oauth2.googleapis.com", "cloudcode-pa.googleapis.com", "www.googleapis.com")
	// Codex's ChatGPT login on the host (what `codex login` writes), its tokens made up: the
	// fake chatgpt.com refuses the first access token as expired, the fake token endpoint
	// takes the first refresh token once and answers the second set.
	loginFile := filepath.Join(homeWorkdir(t), "auth.json") // the Lima user's, as a person's would be
	login1, login2 := e2eLoginTokens(1), e2eLoginTokens(2)
	b, err := json.Marshal(map[string]any{"OPENAI_API_KEY": nil, "last_refresh": "2026-11-30T00:00:00Z",
		"tokens": map[string]string{"access_token": login1[0], "id_token": login1[1], "refresh_token": login1[2], "account_id": "acct-e2e"}})
	mustT(t, err)
	mustT(t, os.WriteFile(loginFile, b, 0o600))
	mustT(t, os.Chown(loginFile, vmUID(t), vmGID(t)))
	prov.login = &e2eLogin{expired: login1[0], refresh: login1[2], next: login2}
	// Gemini CLI's Google login on the host, expired: the fake token endpoint takes the
	// refresh token (Google keeps it) and answers a new access token.
	googleFile := filepath.Join(filepath.Dir(loginFile), "oauth_creds.json")
	b, err = json.Marshal(map[string]any{"access_token": "ya29.E2EREALgoogle1", "refresh_token": "1//E2EREALgoogleRefresh",
		"id_token": e2eLoginTokens(1)[1], "scope": "https://www.googleapis.com/auth/cloud-platform openid", "token_type": "Bearer",
		"expiry_date": time.Now().Add(-time.Hour).UnixMilli()})
	mustT(t, err)
	mustT(t, os.WriteFile(googleFile, b, 0o600))
	mustT(t, os.Chown(googleFile, vmUID(t), vmGID(t)))
	prov.google = &e2eGoogle{refresh: "1//E2EREALgoogleRefresh", access: "ya29.E2EREALgoogle1"}
	dir := homeWorkdir(t)
	mustT(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644))
	_ = os.Chown(filepath.Join(dir, "README.md"), vmUID(t), vmGID(t))
	discardOnCleanup(t, dir)
	hook := []string{
		secrets.TestUpstreamEnv + "=api.anthropic.com:443=" + prov.ln.Addr().String() + ",api.openai.com:443=" + prov.ln.Addr().String() + ",generativelanguage.googleapis.com:443=" + prov.ln.Addr().String() +
			",chatgpt.com:443=" + prov.ln.Addr().String() + ",auth.openai.com:443=" + prov.ln.Addr().String() +
			",oauth2.googleapis.com:443=" + prov.ln.Addr().String() + ",cloudcode-pa.googleapis.com:443=" + prov.ln.Addr().String() + ",www.googleapis.com:443=" + prov.ln.Addr().String(),
		secrets.TestCAEnv + "=" + prov.caFile,
	}

	for _, c := range []struct {
		name, secret, value, host, script string
		// sent is what the provider must get, in the header the agent puts its key in.
		header, sent string
		// network is the session's policy (default allow:nothing-else.invalid).
		network string
		// login, when set, is the --login flag instead of --secret (secret names what the
		// log and status call it; HOLDS is then what the agent's login file, holds, holds);
		// expired is the token the fake refuses, before the refresh.
		login, holds, expired string
		// after checks the login's host file.
		after func(t *testing.T)
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
		{
			// A ChatGPT subscription: Codex's login file in the guest holds placeholders; its
			// first token is refused as expired, it refreshes through the relay, and goes on
			// with the new token, which the relay keeps on the host.
			name: "codex-chatgpt", secret: "codex-login", login: "codex=file:" + loginFile, host: "chatgpt.com",
			script: "timeout 240 " + agentsDir + "/codex exec --skip-git-repo-check 'say hi' </dev/null",
			header: "Authorization", sent: "Bearer " + login2[0], value: "E2EREAL", expired: "Bearer " + login1[0],
			holds: `"$HOME/.codex/auth.json"`,
			after: func(t *testing.T) {
				var host struct{ Tokens map[string]string }
				hostFile, err := os.ReadFile(loginFile)
				mustT(t, err)
				mustT(t, json.Unmarshal(hostFile, &host))
				if host.Tokens["access_token"] != login2[0] || host.Tokens["refresh_token"] != login2[2] || prov.login.refreshes() != 1 {
					t.Errorf("after %d refreshes the host's login file holds %v", prov.login.refreshes(), host.Tokens)
				}
			},
		},
		{
			// A Google login: Gemini CLI's credentials file in the guest holds placeholders and
			// an expiry past; it refreshes through the relay, checks the new token at tokeninfo
			// and calls Code Assist with it.
			name: "gemini-google", secret: "gemini-login", login: "gemini=file:" + googleFile, host: "cloudcode-pa.googleapis.com",
			script: "GOOGLE_GENAI_USE_GCA=true GEMINI_CLI_TRUST_WORKSPACE=true timeout 240 " + agentsDir + "/node " + agentsDir + "/gemini-cli/bundle/gemini.js -p 'say hi' </dev/null",
			header: "Authorization", sent: "Bearer ya29.E2EREALgoogle2", value: "E2EREAL",
			holds: `"$HOME/.gemini/oauth_creds.json"`,
			after: func(t *testing.T) {
				var host map[string]any
				hostFile, err := os.ReadFile(googleFile)
				mustT(t, err)
				mustT(t, json.Unmarshal(hostFile, &host))
				if host["access_token"] != "ya29.E2EREALgoogle2" || host["refresh_token"] != "1//E2EREALgoogleRefresh" || prov.google.refreshes() != 1 {
					t.Errorf("after %d refreshes the host's login file holds %v", prov.google.refreshes(), host)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(prov.requests())
			script := `echo "HOLDS=$` + c.secret + `"; ` + c.script + `; echo "AGENT-EXIT=$?"`
			env, flag := append([]string{c.secret + "=" + c.value}, hook...), []string{"--secret", c.secret}
			if c.login != "" {
				// What the agent's file holds after its run (the refreshed placeholders).
				script = c.script + `; echo "AGENT-EXIT=$?"; echo "HOLDS=$(tr -d '\n ' < ` + c.holds + `)"`
				env, flag = hook, []string{"--login", c.login}
			}
			network := c.network
			if network == "" {
				network = "allow:nothing-else.invalid"
			}
			t0 := time.Now()
			stdout, stderr, code := mcpShell(t, dir, env,
				append(append([]string{"--network=" + network}, flag...), "--no-review", instanceName, "--", "sh", "-c", script)...)
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
				case c.expired != "" && got == c.expired:
					// the first token, which the fake refuses as expired
				case got != "":
					t.Errorf("%s got %s %q, not the value", c.host, c.header, got)
				}
			}
			if withValue == 0 {
				t.Errorf("%s never reached %s with the value in %s (%d requests reached the provider)", c.name, c.host, c.header, len(reqs))
			}
			if c.after != nil {
				c.after(t)
			}
		})
	}
	st, _, code := plugin(t, dir, "status", instanceName)
	for _, want := range []string{"ANTHROPIC_API_KEY used", "CODEX_API_KEY used", "GEMINI_API_KEY used", "CLAUDE_CODE_OAUTH_TOKEN used", "codex-login used", "gemini-login used"} {
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
	login  *e2eLogin
	google *e2eGoogle
}

// e2eLogin is the fake side of Codex's ChatGPT login: chatgpt.com refuses the expired access
// token (401), auth.openai.com/oauth/token takes the refresh token once and answers next.
type e2eLogin struct {
	expired, refresh string
	next             [3]string
	mu               sync.Mutex
	n                int
}

func (l *e2eLogin) refreshes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *e2eLogin) answer(host string, w http.ResponseWriter, r *http.Request) bool {
	switch {
	case host == "chatgpt.com" && r.Header.Get("Authorization") == "Bearer "+l.expired:
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Your authentication token has expired.","code":"token_expired"}}`)
		return true
	case host == "auth.openai.com" && r.URL.Path == "/oauth/token":
		var m map[string]any
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_ = json.Unmarshal(body, &m)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n > 0 || m["refresh_token"] != l.refresh {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_grant"}`)
			return true
		}
		l.n++
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": l.next[0], "id_token": l.next[1], "refresh_token": l.next[2], "expires_in": 864000})
		return true
	}
	return false
}

// e2eGoogle is the fake side of Gemini CLI's Google login: oauth2.googleapis.com's token
// endpoint takes the refresh token (a form) once and answers a new access token; tokeninfo
// and www.googleapis.com know only the current one; Code Assist answers the provider's 400.
type e2eGoogle struct {
	refresh, access string
	mu              sync.Mutex
	n               int
}

func (g *e2eGoogle) refreshes() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

func (g *e2eGoogle) answer(host string, w http.ResponseWriter, r *http.Request) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case host == "oauth2.googleapis.com" && r.URL.Path == "/token":
		_ = r.ParseForm()
		if g.n > 0 || r.PostForm.Get("refresh_token") != g.refresh {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_grant"}`)
			return true
		}
		g.n++
		g.access = "ya29.E2EREALgoogle2"
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": g.access, "expires_in": 3599, "token_type": "Bearer",
			"scope": "https://www.googleapis.com/auth/cloud-platform openid", "id_token": e2eLoginTokens(2)[1]})
		return true
	case host == "oauth2.googleapis.com" || host == "www.googleapis.com":
		if r.Header.Get("Authorization") != "Bearer "+g.access {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_token"}`)
			return true
		}
		io.WriteString(w, `{"expires_in":3500,"scope":"https://www.googleapis.com/auth/cloud-platform openid","email":"person@example.com"}`)
		return true
	}
	return false
}

// e2eLoginExp is the access token's expiry: the first one's is past (Codex may refresh before
// it sends it; the fake refuses it too), the next ones' far ahead.
func e2eLoginExp(n int) int64 {
	if n == 1 {
		return time.Now().Add(-time.Hour).Unix()
	}
	return 2000000000 + int64(n)
}

// e2eLoginTokens are a made-up ChatGPT login's access, id and refresh tokens (JWTs of a
// payload Codex reads, with a signature that says they are the real ones).
func e2eLoginTokens(n int) [3]string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	head := enc(map[string]string{"alg": "RS256", "typ": "JWT"})
	return [3]string{
		head + "." + enc(map[string]any{"exp": e2eLoginExp(n), "https://api.openai.com/auth": map[string]string{"chatgpt_account_id": "acct-e2e", "chatgpt_plan_type": "plus"}}) + fmt.Sprintf(".E2EREALaccessSig%d", n),
		head + "." + enc(map[string]any{"email": "person@example.com", "n": n}) + fmt.Sprintf(".E2EREALidSig%d", n),
		fmt.Sprintf("rt_E2EREALrefresh%d", n),
	}
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
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body)) // for the login's token endpoint
		req := providerRequest{host: strings.ToLower(r.TLS.ServerName), method: r.Method, path: r.URL.Path, headers: map[string]string{}}
		for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
			req.headers[h] = r.Header.Get(h)
		}
		p.mu.Lock()
		p.got = append(p.got, req)
		login, google := p.login, p.google
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if login != nil && login.answer(req.host, w, r) || google != nil && google.answer(req.host, w, r) {
			return
		}
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
