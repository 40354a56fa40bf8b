package secrets

import (
	"net/http"
	"strings"
	"testing"
)

// TestLoginRealCodex: the real Codex (the release hack/e2e/install-clients.sh pins), logged
// in with ChatGPT through a guest file of placeholders, behind the relay. Its first access
// token has expired (its payload says so, and the fake refuses it): it refreshes through the relay, which gives
// the fake auth.openai.com the real refresh token and keeps the new tokens in the host's file;
// Codex writes the placeholders it got into its own file and goes on with them, and chatgpt.com
// gets the new real token. No real token reaches Codex's file or output.
func TestLoginRealCodex(t *testing.T) {
	bin := realClient(t, "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
	h, l, fl := newLoginHarness(t)
	a1 := h.value["codex access"]
	a2, _, rt2 := loginTokensN(2)
	h.mu.Lock()
	first := h.answerFirst
	h.answerFirst = func(host string, w http.ResponseWriter, r *http.Request) bool {
		if first(host, w, r) {
			return true
		}
		if host != chatgptHost {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") == "Bearer "+a1 {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Your authentication token has expired.","code":"token_expired"}}`))
			return true
		}
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"the fake provider has no model"}}`))
		return true
	}
	h.mu.Unlock()
	out, guestFile := runLoggedIn(t, h, l, ".codex/auth.json", nil, bin, "exec", "--skip-git-repo-check", "say hi")
	if strings.Contains(string(out), "REAL") {
		t.Errorf("a real token reached Codex's output:\n%s", out)
	}
	gotA1, gotA2 := 0, 0
	for _, s := range h.requests(chatgptHost) {
		switch got := s.req.Header.Get("Authorization"); got {
		case "Bearer " + a1:
			gotA1++
		case "Bearer " + a2:
			gotA2++
		default:
			t.Errorf("chatgpt.com %s got Authorization %.90q", s.req.URL.Path, got)
		}
	}
	// The first token, expired, may be sent before the refresh (and refused) or not at all.
	if gotA2 == 0 || fl.n != 1 {
		t.Errorf("chatgpt.com got the first token %d times, the refreshed one %d times; %d refreshes (want 1)\n%s", gotA1, gotA2, fl.n, out)
	}
	g := string(mustRead(t, guestFile))
	if strings.Contains(g, "REAL") || !strings.Contains(g, l.accessSig()) || !strings.Contains(g, l.refreshMark()) || !strings.Contains(g, a2[:strings.LastIndexByte(a2, '.')]) {
		t.Errorf("Codex's file after the refresh:\n%s", g)
	}
	if _, tok := readAuth(t, l); tok["access_token"] != a2 || tok["refresh_token"] != rt2 {
		t.Errorf("the host's file after the refresh: %v", tok)
	}
}
