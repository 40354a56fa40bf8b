package secrets

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A fake ChatGPT login: JWTs of a made-up payload with a signature that marks them real.
func fakeJWT(payload map[string]any, sig string) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	return enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(payload) + "." + sig
}

type fakeLogin struct {
	mu      sync.Mutex
	refresh string // the refresh token the fake auth.openai.com takes now
	n       int    // refreshes done
	answer  func(w http.ResponseWriter) bool
}

// loginExp is the access token's expiry: the first one's is past (Codex then refreshes before
// it sends it; the fake also refuses it, as an expired token is), the next ones' far ahead.
func loginExp(n int) int64 {
	if n == 1 {
		return time.Now().Add(-time.Hour).Unix()
	}
	return 2000000000 + int64(n)
}

func loginTokensN(n int) (access, id, refresh string) {
	return fakeJWT(map[string]any{"exp": loginExp(n), "https://api.openai.com/auth": map[string]string{"chatgpt_account_id": "acct-e2e"}}, fmt.Sprintf("REALaccessSIG%d", n)),
		fakeJWT(map[string]any{"email": "person@example.com", "n": n}, fmt.Sprintf("REALidSIG%d", n)),
		fmt.Sprintf("rt_REALrefresh%d", n)
}

// newLoginHarness is the harness with a Codex login whose host file is in a temporary
// directory, and fakes of chatgpt.com and auth.openai.com (which rotates the refresh token).
func newLoginHarness(t *testing.T) (*harness, *Login, *fakeLogin) {
	h := newHarness(t)
	access, id, refresh := loginTokensN(1)
	l := addLogin(t, h, "codex", ".codex/auth.json", map[string]any{"OPENAI_API_KEY": "sk-proj-REALkeyBESIDEtheLOGIN", "tokens": map[string]string{
		"id_token": id, "access_token": access, "refresh_token": refresh, "account_id": "acct-e2e"},
		"last_refresh": "2026-11-01T00:00:00Z", "kept": "as it was"})
	fl := &fakeLogin{refresh: refresh}
	h.mu.Lock()
	h.answerFirst = func(host string, w http.ResponseWriter, r *http.Request) bool {
		if host != openaiAuthHost || r.URL.Path != "/oauth/token" {
			return false
		}
		fl.mu.Lock()
		defer fl.mu.Unlock()
		if fl.answer != nil && fl.answer(w) {
			return true
		}
		var got string
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			r.ParseForm()
			got = r.PostForm.Get("refresh_token")
		} else {
			var m map[string]any
			json.NewDecoder(r.Body).Decode(&m)
			got, _ = m["refresh_token"].(string)
		}
		w.Header().Set("Content-Type", "application/json")
		if got != fl.refresh {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_grant"}`)
			return true
		}
		fl.n++
		a, i, rt := loginTokensN(fl.n + 1)
		fl.refresh = rt
		json.NewEncoder(w).Encode(map[string]any{"access_token": a, "id_token": i, "refresh_token": rt, "expires_in": 864000, "token_type": "Bearer"})
		return true
	}
	h.mu.Unlock()
	h.value["codex access"], h.value["codex id"], h.value["codex refresh"] = access, id, refresh
	return h, l, fl
}

func readAuth(t *testing.T, l *Login) (map[string]any, map[string]any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustRead(t, l.Path), &m); err != nil {
		t.Fatal(err)
	}
	tok, _ := m["tokens"].(map[string]any)
	return m, tok
}

// TestLoginGuestFile: the guest's file keeps the payloads the agent reads and the account,
// holds placeholders for every token, and leaves out an API key kept beside the login and
// fields the agent does not need.
func TestLoginGuestFile(t *testing.T) {
	h, l, _ := newLoginHarness(t)
	b, err := l.GuestContent()
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, real := range []string{"REAL", "kept"} {
		if strings.Contains(s, real) {
			t.Errorf("the guest's file holds %q:\n%s", real, s)
		}
	}
	var g struct {
		Key    *string           `json:"OPENAI_API_KEY"`
		Tokens map[string]string `json:"tokens"`
		Last   string            `json:"last_refresh"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if g.Key != nil || g.Tokens["account_id"] != "acct-e2e" || g.Last != "2026-11-01T00:00:00Z" {
		t.Errorf("the guest's file: %s", s)
	}
	for k, real := range map[string]string{"access_token": h.value["codex access"], "id_token": h.value["codex id"]} {
		ph := g.Tokens[k]
		if !isJWT(ph) || !strings.Contains(ph, PlaceholderMark) || ph[:strings.LastIndexByte(ph, '.')] != real[:strings.LastIndexByte(real, '.')] {
			t.Errorf("%s: %q is not the real header and payload with a placeholder signature", k, ph)
		}
	}
	if !strings.HasPrefix(g.Tokens["refresh_token"], PlaceholderMark) {
		t.Errorf("refresh_token %q", g.Tokens["refresh_token"])
	}
	// The script that writes it carries it, and only it.
	script, err := h.set.LoginScript()
	if err != nil || !strings.Contains(script, base64.StdEncoding.EncodeToString(b)) || !strings.Contains(script, `${CODEX_HOME:-$HOME/.codex}/auth.json`) || strings.Contains(script, "REAL") {
		t.Errorf("the login script (%v):\n%s", err, script)
	}
}

// TestLoginRelay: the agent's placeholder access token reaches chatgpt.com as the host file's
// token; a refresh at auth.openai.com gets the real refresh token, its answer's tokens go to
// the host file (every other field kept) and the guest gets placeholders, with which the next
// request carries the new token and the next refresh the rotated one; a form body works too;
// the placeholders sent anywhere else stay placeholders.
func TestLoginRelay(t *testing.T) {
	h, l, fl := newLoginHarness(t)
	c := h.client()
	var guest struct {
		Tokens map[string]string `json:"tokens"`
	}
	b, _ := l.GuestContent()
	json.Unmarshal(b, &guest)
	access, refresh := guest.Tokens["access_token"], guest.Tokens["refresh_token"]

	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	lastAuth := func(host string) string {
		rs := h.requests(host)
		if len(rs) == 0 {
			t.Fatalf("%s got nothing", host)
		}
		return rs[len(rs)-1].req.Header.Get("Authorization")
	}
	get(t, c, "GET", "https://chatgpt.com/backend-api/codex/models", bearer(access), "")
	if got := lastAuth(chatgptHost); got != "Bearer "+h.value["codex access"] {
		t.Fatalf("chatgpt.com got %q", got)
	}
	for n := 2; n <= 3; n++ {
		body := `{"client_id":"app_X","grant_type":"refresh_token","refresh_token":"` + refresh + `","scope":"openid profile email"}`
		hdr := map[string]string{"Content-Type": "application/json", "Accept-Encoding": "gzip"}
		if n == 3 {
			body = url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}.Encode()
			hdr["Content-Type"] = "application/x-www-form-urlencoded"
		}
		resp, got := get(t, c, "POST", "https://auth.openai.com/oauth/token", hdr, body)
		if resp.StatusCode != 200 || strings.Contains(got, "REAL") {
			t.Fatalf("refresh %d: %d %s", n, resp.StatusCode, got)
		}
		var ans map[string]any
		if err := json.Unmarshal([]byte(got), &ans); err != nil || ans["expires_in"] == nil {
			t.Fatalf("refresh %d: %s", n, got)
		}
		a, i, rt := loginTokensN(n)
		top, tok := readAuth(t, l)
		if tok["access_token"] != a || tok["id_token"] != i || tok["refresh_token"] != rt || tok["account_id"] != "acct-e2e" ||
			top["kept"] != "as it was" || top["OPENAI_API_KEY"] != "sk-proj-REALkeyBESIDEtheLOGIN" || top["last_refresh"] == "2026-11-01T00:00:00Z" {
			t.Fatalf("refresh %d: the host's file: %v", n, top)
		}
		if st, _ := os.Stat(l.Path); st.Mode().Perm() != 0o600 {
			t.Errorf("the host's file is %v", st.Mode())
		}
		access, refresh = ans["access_token"].(string), ans["refresh_token"].(string)
		if access[:strings.LastIndexByte(access, '.')] != a[:strings.LastIndexByte(a, '.')] || !strings.HasSuffix(access, l.accessSig()) || refresh != l.refreshMark() {
			t.Fatalf("refresh %d: the guest got %s", n, got)
		}
		get(t, c, "GET", "https://chatgpt.com/backend-api/wham/accounts/check", bearer(access), "")
		if got := lastAuth(chatgptHost); got != "Bearer "+a {
			t.Fatalf("after refresh %d chatgpt.com got %q", n, got)
		}
	}
	if fl.n != 2 {
		t.Errorf("the fake refreshed %d times", fl.n)
	}
	// Elsewhere the placeholders stay what they are: another host, another header, a body.
	get(t, c, "POST", "https://uploads.example.net/x", bearer(access), `{"refresh_token":"`+refresh+`"}`)
	get(t, c, "POST", "https://chatgpt.com/backend-api/x", map[string]string{"X-Other": "Bearer " + access}, `{"refresh_token":"`+refresh+`"}`)
	for _, host := range []string{unboundHost, chatgptHost} {
		rs := h.requests(host)
		if d := rs[len(rs)-1].dump; strings.Contains(d, "REAL") || !strings.Contains(d, refresh) {
			t.Errorf("%s got:\n%s", host, d)
		}
	}
	if n := h.log.Count("codex-login", "auth.openai.com:443"); n != 2 {
		t.Errorf("the log counts %d refreshes", n)
	}
	if n := h.log.Count("codex-login", "chatgpt.com:443"); n != 3 {
		t.Errorf("the log counts %d uses at chatgpt.com", n)
	}
}

// TestLoginRefreshAnswersThatCannotBeRead: a token endpoint's success that is compressed, not
// JSON, or holds a token that is not a JWT reaches the guest as a 502 without a byte of it,
// and the host's file stays as it was; an error answer passes.
func TestLoginRefreshAnswersThatCannotBeRead(t *testing.T) {
	h, l, fl := newLoginHarness(t)
	c := h.client()
	before := string(mustRead(t, l.Path))
	_, next, _ := loginTokensN(9)
	for name, answer := range map[string]func(w http.ResponseWriter) bool{
		"gzip": func(w http.ResponseWriter) bool {
			w.Header().Set("Content-Encoding", "gzip")
			io.WriteString(w, `{"access_token":"REALgzipped"}`)
			return true
		},
		"text": func(w http.ResponseWriter) bool { io.WriteString(w, "access_token=REALtext"); return true },
		"notjwt": func(w http.ResponseWriter) bool {
			io.WriteString(w, `{"access_token":"REALopaque","id_token":"`+next+`"}`)
			return true
		},
		"array": func(w http.ResponseWriter) bool { io.WriteString(w, `["REALarray"]`); return true },
	} {
		fl.mu.Lock()
		fl.answer = answer
		fl.mu.Unlock()
		body := `{"grant_type":"refresh_token","refresh_token":"` + l.refreshMark() + `"}`
		resp, got := get(t, c, "POST", "https://auth.openai.com/oauth/token", map[string]string{"Content-Type": "application/json"}, body)
		if resp.StatusCode != http.StatusBadGateway || strings.Contains(got, "REAL") {
			t.Errorf("%s: %d %q", name, resp.StatusCode, got)
		}
		if now := string(mustRead(t, l.Path)); now != before {
			t.Errorf("%s: the host's file changed", name)
		}
	}
	fl.mu.Lock()
	fl.answer = nil
	fl.refresh = "rt_something_else"
	fl.mu.Unlock()
	resp, got := get(t, c, "POST", "https://auth.openai.com/oauth/token", map[string]string{"Content-Type": "application/json"},
		`{"grant_type":"refresh_token","refresh_token":"`+l.refreshMark()+`"}`)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(got, "invalid_grant") {
		t.Errorf("an error answer: %d %q", resp.StatusCode, got)
	}
	// The placeholder somewhere but in refresh_token: refused, never sent.
	n := len(h.requests(openaiAuthHost))
	resp, _ = get(t, c, "POST", "https://auth.openai.com/oauth/token", map[string]string{"Content-Type": "application/json"},
		`{"grant_type":"refresh_token","refresh_token":"x","other":"`+l.refreshMark()+`"}`)
	if resp.StatusCode != http.StatusBadRequest || len(h.requests(openaiAuthHost)) != n {
		t.Errorf("a placeholder elsewhere in the body: %d", resp.StatusCode)
	}
}

// TestParseLoginErrors: what --login refuses says what to do.
func TestParseLoginErrors(t *testing.T) {
	home := t.TempDir()
	lookup := func(k string) (string, bool) { return map[string]string{"HOME": home}[k], k == "HOME" }
	write := func(s string) string {
		p := filepath.Join(home, fmt.Sprintf("auth%d.json", len(s)))
		os.WriteFile(p, []byte(s), 0o600)
		return p
	}
	access, id, _ := loginTokensN(1)
	for _, c := range []struct{ flag, want string }{
		{"claude", `unknown agent "claude": --login takes codex`},
		{"codex", "no such file: log in on the host first (`codex login`"},
		{"codex=" + write(`{"OPENAI_API_KEY":"sk-proj-x"}`), "no ChatGPT login in it"},
		{"codex=" + write(`not json`), "not the JSON codex writes"},
		{"codex=file:" + write(`{"tokens":{"access_token":"opaque","id_token":"`+id+`","refresh_token":"r"}}`), "not a JWT"},
		{"codex=" + home, "not a regular file"},
	} {
		_, err := ParseLogin(c.flag, lookup)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--login %s: %v, want %q", c.flag, err, c.want)
		}
	}
	p := write(`{"tokens":{"access_token":"` + access + `","id_token":"` + id + `","refresh_token":"r"}}`)
	if l, err := ParseLogin("codex=file:"+p, lookup); err != nil || l.Path != p {
		t.Errorf("--login codex=file:%s: %v", p, err)
	}
}

// realClient is rel in the agents' clients that hack/e2e/install-clients.sh installs (.ci/run
// runs it); the test fails with that fix when it is missing.
func realClient(t *testing.T, rel string) string {
	t.Helper()
	clients := os.Getenv("LIMACTL_MCP_CLIENTS_DIR")
	if clients == "" {
		clients = "/var/cache/limactl-mcp-clients"
	}
	p := filepath.Join(clients, rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the real agent is needed: run, as root, hack/e2e/install-clients.sh %s (.ci/run does): %v", clients, err)
	}
	return p
}

// runLoggedIn runs argv as the guest would: HOME a new directory holding l's guest file at
// rel, its HTTPS through the harness's front, trusting the session CA (and the fakes' CA, for
// the public roots), with env added. It returns the output and the guest file's path.
func runLoggedIn(t *testing.T, h *harness, l *Login, rel string, env []string, argv ...string) ([]byte, string) {
	t.Helper()
	home := t.TempDir()
	guestFile := filepath.Join(home, rel)
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
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = home
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + filepath.Dir(argv[0]) + ":/usr/bin:/bin", "HTTPS_PROXY=http://" + h.front, "https_proxy=http://" + h.front,
		"SSL_CERT_FILE=" + bundle, "NODE_EXTRA_CA_CERTS=" + bundle, "NO_PROXY=", "no_proxy="}, env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s did not end: %s", argv[0], out)
	}
	t.Logf("%s: %v", strings.Join(argv, " "), err)
	return out, guestFile
}

// addLogin gives h's session the login of agent, its host file at rel in a new home holding
// file (JSON), and the session CA for its hosts.
func addLogin(t *testing.T, h *harness, agent, rel string, file any) *Login {
	t.Helper()
	home := t.TempDir()
	b, _ := json.Marshal(file)
	if err := os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, rel), b, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := ParseLogin(agent, func(k string) (string, bool) { return map[string]string{"HOME": home}[k], k == "HOME" })
	if err != nil {
		t.Fatal(err)
	}
	h.set.WithLogins(l)
	if h.ca, err = OpenCA(h.dir, h.set.Hosts()); err != nil {
		t.Fatal(err)
	}
	h.relay.CA = h.ca
	return l
}

// A token request that waits for 100 Continue (curl's way with a body) gets it before the
// relay reads the body, and is refreshed like any other; one larger than the relay reads is
// refused with a 400 that says so, and nothing reaches the token endpoint.
func TestLoginRefreshExpectAndSize(t *testing.T) {
	h, l, fl := newLoginHarness(t)
	var guest struct {
		Tokens map[string]string `json:"tokens"`
	}
	b, _ := l.GuestContent()
	json.Unmarshal(b, &guest)
	refresh := guest.Tokens["refresh_token"]

	tc, err := h.rawTLS(t, "auth.openai.com:443", "auth.openai.com")
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	body := `{"grant_type":"refresh_token","refresh_token":"` + refresh + `"}`
	fmt.Fprintf(tc, "POST /oauth/token HTTP/1.1\r\nHost: auth.openai.com\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
	br := bufio.NewReader(tc)
	tc.SetReadDeadline(time.Now().Add(30 * time.Second))
	interim, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(interim, "HTTP/1.1 100 ") {
		t.Fatalf("waiting for 100 Continue: %q %v (the relay read the body first?)", interim, err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	io.WriteString(tc, body)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || strings.Contains(string(got), "REAL") || fl.n != 1 {
		t.Fatalf("the refresh after 100 Continue: %d %s (the fake refreshed %d times)", resp.StatusCode, got, fl.n)
	}

	big := `{"grant_type":"refresh_token","refresh_token":"` + l.refreshMark() + `","pad":"` + strings.Repeat("x", maxRefreshBody) + `"}`
	resp, ans := get(t, h.client(), "POST", "https://auth.openai.com/oauth/token", map[string]string{"Content-Type": "application/json"}, big)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(ans, "larger than") || fl.n != 1 {
		t.Errorf("a token request over the cap: %d %s (the fake refreshed %d times)", resp.StatusCode, ans, fl.n)
	}
}
