package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGoogle is the fake side of Gemini CLI's Google login: oauth2.googleapis.com's token
// endpoint takes the refresh token (a form) and answers a new access token (Google keeps the
// refresh token); tokeninfo knows only the current access token.
type fakeGoogle struct {
	mu      sync.Mutex
	refresh string
	access  string
	n       int
}

func googleAccess(n int) string { return fmt.Sprintf("ya29.REALgoogleAccess%d", n) }

func newGeminiLoginHarness(t *testing.T, expiry time.Time) (*harness, *Login, *fakeGoogle) {
	h := newHarness(t)
	home := t.TempDir()
	idTok := fakeJWT(map[string]any{"email": "person@example.com"}, "REALgoogleIDsig1")
	file := map[string]any{"access_token": googleAccess(1), "refresh_token": "1//REALgoogleRefresh", "id_token": idTok,
		"scope": "https://www.googleapis.com/auth/cloud-platform openid", "token_type": "Bearer", "expiry_date": expiry.UnixMilli()}
	b, _ := json.Marshal(file)
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	if err := os.WriteFile(filepath.Join(home, ".gemini", "oauth_creds.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := ParseLogin("gemini", func(k string) (string, bool) { return map[string]string{"HOME": home}[k], k == "HOME" })
	if err != nil {
		t.Fatal(err)
	}
	h.set.WithLogins(l)
	if h.ca, err = OpenCA(h.dir, h.set.Hosts()); err != nil {
		t.Fatal(err)
	}
	h.relay.CA = h.ca
	fg := &fakeGoogle{refresh: "1//REALgoogleRefresh", access: googleAccess(1)}
	h.mu.Lock()
	h.answerFirst = func(host string, w http.ResponseWriter, r *http.Request) bool {
		fg.mu.Lock()
		defer fg.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case host == googleOAuthHost && r.URL.Path == "/token":
			r.ParseForm()
			if r.PostForm.Get("refresh_token") != fg.refresh {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"invalid_grant"}`)
				return true
			}
			fg.n++
			fg.access = googleAccess(fg.n + 1)
			json.NewEncoder(w).Encode(map[string]any{"access_token": fg.access, "expires_in": 3599, "token_type": "Bearer",
				"scope": "https://www.googleapis.com/auth/cloud-platform openid", "id_token": fakeJWT(map[string]any{"email": "person@example.com", "n": fg.n}, "REALgoogleIDsig2")})
		case host == googleOAuthHost && r.URL.Path == "/tokeninfo":
			if r.Header.Get("Authorization") != "Bearer "+fg.access {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"invalid_token"}`)
				return true
			}
			fmt.Fprint(w, `{"expires_in":3500,"scope":"https://www.googleapis.com/auth/cloud-platform openid","email":"person@example.com"}`)
		case host == googleAPIsHost:
			fmt.Fprint(w, `{"email":"person@example.com"}`)
		case host == codeAssistHost:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"code":400,"message":"the fake provider has no model","status":"INVALID_ARGUMENT"}}`)
		default:
			return false
		}
		return true
	}
	h.mu.Unlock()
	return h, l, fg
}

// TestLoginRealGemini: the real Gemini CLI (the release install-clients.sh pins) with a Google
// login whose file holds placeholders and an expiry past: it refreshes through the relay (the
// fake token endpoint takes only the real refresh token), checks the new token at tokeninfo
// and calls Code Assist, each with the real new token the relay puts in; the host's file gets
// the new access token and expiry; no real token reaches Gemini's file or output.
func TestLoginRealGemini(t *testing.T) {
	clients := os.Getenv("LIMACTL_MCP_CLIENTS_DIR")
	if clients == "" {
		clients = "/var/cache/limactl-mcp-clients"
	}
	bundleJS := filepath.Join(clients, "node_modules/@google/gemini-cli/bundle/gemini.js")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(bundleJS); serr != nil || err != nil {
		t.Fatalf("the real Gemini CLI and node are needed: run, as root, hack/e2e/install-clients.sh %s (.ci/run does): %v %v", clients, serr, err)
	}
	h, l, fg := newGeminiLoginHarness(t, time.Now().Add(-time.Hour))
	guestHome := t.TempDir()
	guestFile := filepath.Join(guestHome, ".gemini", "oauth_creds.json")
	os.MkdirAll(filepath.Dir(guestFile), 0o700)
	b, err := l.GuestContent()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(guestFile, b, 0o600)
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	os.WriteFile(bundle, append(h.ca.CertPEM(), mustRead(t, h.fakeFile)...), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, bundleJS, "-p", "say hi")
	cmd.Dir = guestHome
	cmd.Env = []string{"HOME=" + guestHome, "PATH=" + filepath.Dir(node) + ":/usr/bin:/bin", "HTTPS_PROXY=http://" + h.front, "https_proxy=http://" + h.front,
		"NODE_EXTRA_CA_CERTS=" + bundle, "NO_PROXY=", "no_proxy=", "GOOGLE_GENAI_USE_GCA=true", "GEMINI_CLI_TRUST_WORKSPACE=true", "NO_BROWSER=true"}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gemini did not end: %s", out)
	}
	t.Logf("gemini -p: %v", err)
	if strings.Contains(string(out), "REAL") {
		t.Errorf("a real token reached Gemini's output:\n%s", out)
	}
	want := "Bearer " + googleAccess(2)
	codeAssist := 0
	for _, host := range []string{googleOAuthHost, googleAPIsHost, codeAssistHost} {
		for _, s := range h.requests(host) {
			if s.req.URL.Path == "/token" {
				continue
			}
			if host == codeAssistHost {
				codeAssist++
			}
			if got := s.req.Header.Get("Authorization"); got != want {
				t.Errorf("%s %s got Authorization %q, want the refreshed token", host, s.req.URL.Path, got)
			}
		}
	}
	fg.mu.Lock()
	refreshes := fg.n
	fg.mu.Unlock()
	if refreshes != 1 || codeAssist == 0 {
		t.Errorf("%d refreshes (want 1), %d Code Assist requests\n%s", refreshes, codeAssist, out)
	}
	var g, hf map[string]any
	gb := mustRead(t, guestFile)
	json.Unmarshal(gb, &g)
	json.Unmarshal(mustRead(t, l.Path), &hf)
	exp, _ := g["expiry_date"].(float64)
	if strings.Contains(string(gb), "REAL") || g["access_token"] != l.accessPlaceholder("") || time.UnixMilli(int64(exp)).Before(time.Now()) {
		t.Errorf("Gemini's file after the refresh:\n%s", gb)
	}
	hexp, _ := hf["expiry_date"].(float64)
	if hf["access_token"] != googleAccess(2) || hf["refresh_token"] != "1//REALgoogleRefresh" || time.UnixMilli(int64(hexp)).Before(time.Now()) {
		t.Errorf("the host's file after the refresh: %v", hf)
	}
}
