package secrets

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
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
	idTok := fakeJWT(map[string]any{"email": "person@example.com"}, "REALgoogleIDsig1")
	l := addLogin(t, h, "gemini", ".gemini/oauth_creds.json", map[string]any{"access_token": googleAccess(1), "refresh_token": "1//REALgoogleRefresh", "id_token": idTok,
		"scope": "https://www.googleapis.com/auth/cloud-platform openid", "token_type": "Bearer", "expiry_date": expiry.UnixMilli()})
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
	bundleJS := realClient(t, "node_modules/@google/gemini-cli/bundle/gemini.js")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed: %v", err)
	}
	h, l, fg := newGeminiLoginHarness(t, time.Now().Add(-time.Hour))
	out, guestFile := runLoggedIn(t, h, l, ".gemini/oauth_creds.json", []string{"GOOGLE_GENAI_USE_GCA=true", "GEMINI_CLI_TRUST_WORKSPACE=true", "NO_BROWSER=true"},
		node, bundleJS, "-p", "say hi")
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
