package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// An agent's subscription login (docs/secrets.md "Subscriptions"). The tokens a login on the
// host keeps in a file (Codex's ChatGPT login: ~/.codex/auth.json) stay in that file. The guest
// gets the same file with placeholders: each JWT keeps its header and payload (which the agent
// reads itself: the account, the plan, the expiry; no credential) and gets a placeholder for a
// signature, so it is worth nothing to the provider; the refresh token is a placeholder. The
// relay puts the file's current tokens into the agent's requests to the login's hosts, and when
// the agent refreshes, puts the real refresh token into that one request's body and takes the
// new tokens out of the answer: they go into the host's file (the refresh token is used once:
// the person's own agent on the host goes on with the new one), the guest gets placeholders.

// LoginKind is one agent's login.
type LoginKind struct {
	// Agent is what --login takes; What names the login, LoginHow says how to log in on the
	// host.
	Agent, What, LoginHow string
	// Name is how the log and status name it.
	Name string
	// APIHosts get the access token (Authorization: Bearer), host:port.
	APIHosts []string
	// TokenTarget and TokenPath are the token endpoint the agent refreshes at.
	TokenTarget, TokenPath string
	// GuestFile is the file in the guest, a shell word expanded there.
	GuestFile string
	// hostFile is the file on the host when --login names none.
	hostFile func(lookup func(string) (string, bool)) string
	// Nested is the object the tokens are in ("": the file's top level).
	Nested string
	// OpaqueAccess, when set, is the prefix of an access token that is not a JWT (its
	// placeholder has it too); else the access token is a JWT.
	OpaqueAccess string
	// IDOptional: the file may hold no id_token.
	IDOptional bool
	// GuestKeep are the fields the guest's file keeps from the host's (beside the tokens'
	// placeholders), at the top level and in Nested; GuestNull are top-level fields it gets as
	// null.
	GuestKeep, GuestKeepNested, GuestNull []string
	// LastRefresh, when set, is the top-level field a refresh sets to now (RFC 3339);
	// ExpiryMillis the one it sets to the answer's expires_in from now (Unix milliseconds).
	LastRefresh, ExpiryMillis string
}

// LoginKinds are the logins --login knows.
var LoginKinds = []LoginKind{{
	// Codex 0.169's ChatGPT login: `codex login` on the host writes auth.json (tokens.id_token,
	// access_token, refresh_token, account_id; last_refresh) where cli_auth_credentials_store
	// is "file", the default. It sends the access token to chatgpt.com (/backend-api/...), and
	// on a 401, or when last_refresh is 8 days old, POSTs {"client_id", "grant_type":
	// "refresh_token", "refresh_token", "scope"} to auth.openai.com/oauth/token.
	Agent: "codex", Name: "codex-login", What: "ChatGPT login",
	LoginHow:    "`codex login`, with the tokens kept in a file: cli_auth_credentials_store = \"file\"; an API key is --secret CODEX_API_KEY",
	APIHosts:    []string{"chatgpt.com:443"},
	TokenTarget: "auth.openai.com:443", TokenPath: "/oauth/token",
	GuestFile: `"${CODEX_HOME:-$HOME/.codex}/auth.json"`,
	hostFile: func(lookup func(string) (string, bool)) string {
		if d, ok := lookup("CODEX_HOME"); ok && d != "" {
			return filepath.Join(d, "auth.json")
		}
		return homeFile(lookup, ".codex", "auth.json")
	},
	Nested: "tokens", GuestKeep: []string{"last_refresh", "auth_mode"}, GuestKeepNested: []string{"account_id"},
	GuestNull: []string{"OPENAI_API_KEY"}, LastRefresh: "last_refresh",
}, {
	// Gemini CLI 0.61's Google login (oauth-personal): ~/.gemini/oauth_creds.json (access_token,
	// an opaque ya29.…; refresh_token; id_token; expiry_date in ms; scope, token_type). When
	// expiry_date is past it POSTs a form with the refresh token to oauth2.googleapis.com/token,
	// then checks the access token at oauth2.googleapis.com/tokeninfo and sends it to
	// cloudcode-pa.googleapis.com (Code Assist) and www.googleapis.com (the account's email).
	Agent: "gemini", Name: "gemini-login", What: "Google login",
	LoginHow:    "`gemini`, Login with Google; an API key is --secret GEMINI_API_KEY",
	APIHosts:    []string{"cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443", "www.googleapis.com:443"},
	TokenTarget: "oauth2.googleapis.com:443", TokenPath: "/token",
	GuestFile: `"$HOME/.gemini/oauth_creds.json"`,
	hostFile: func(lookup func(string) (string, bool)) string {
		return homeFile(lookup, ".gemini", "oauth_creds.json")
	},
	OpaqueAccess: "ya29.", IDOptional: true, GuestKeep: []string{"scope", "token_type", "expiry_date"},
	ExpiryMillis: "expiry_date",
}}

func homeFile(lookup func(string) (string, bool), elem ...string) string {
	if h, ok := lookup("HOME"); ok && h != "" {
		return filepath.Join(append([]string{h}, elem...)...)
	}
	return ""
}

// Limits of a login.
const (
	// maxLoginFile caps the host's token file and the token endpoint's answer.
	maxLoginFile = 1 << 20
	// maxRefreshBody caps a refresh request's body.
	maxRefreshBody = 64 << 10
)

// Login is one --login of a session: its kind, the host's file, and the placeholder mark its
// placeholders are made of (shared by the session's processes: PlaceholdersFile, under
// Kind.Name).
type Login struct {
	Kind LoginKind
	Path string
	Mark string

	mu sync.Mutex // one read-modify-write of Path at a time
}

// ParseLogin parses one --login: AGENT or AGENT=PATH (the host's token file; default the
// agent's own). The file is read now: a login missing on the host is an error then.
func ParseLogin(s string, lookup func(string) (string, bool)) (*Login, error) {
	agent, path, hasPath := strings.Cut(s, "=")
	i := slices.IndexFunc(LoginKinds, func(k LoginKind) bool { return k.Agent == agent })
	if i < 0 {
		var agents []string
		for _, k := range LoginKinds {
			agents = append(agents, k.Agent)
		}
		return nil, fmt.Errorf("--login %s: unknown agent %q: --login takes %s (an API key is --secret NAME)", s, agent, strings.Join(agents, ", "))
	}
	k := LoginKinds[i]
	if hasPath {
		path = strings.TrimPrefix(path, "file:")
	} else {
		path = k.hostFile(lookup)
	}
	if path == "" {
		return nil, fmt.Errorf("--login %s: no HOME to find its file in; name it: --login %s=PATH", s, agent)
	}
	l := &Login{Kind: k, Path: path, Mark: PlaceholderMark + randomText(32)}
	if _, _, _, err := l.read(); err != nil {
		return nil, err
	}
	return l, nil
}

// loginTokens are a login's tokens.
type loginTokens struct {
	ID, Access, Refresh string
}

func (t loginTokens) all() []string { return []string{t.Access, t.ID, t.Refresh} }

// Placeholders of a login: the mark and a letter for which token.
func (l *Login) accessSig() string   { return l.Mark + "A" }
func (l *Login) idSig() string       { return l.Mark + "I" }
func (l *Login) refreshMark() string { return l.Mark + "R" }

// accessPlaceholder is what the guest holds for the access token t.
func (l *Login) accessPlaceholder(t string) string {
	if l.Kind.OpaqueAccess != "" {
		return l.Kind.OpaqueAccess + l.accessSig()
	}
	return jwtPlaceholder(t, l.accessSig())
}

// read reads the host's file: its top-level fields, the object the tokens are in, and the
// tokens.
func (l *Login) read() (top, obj map[string]json.RawMessage, t loginTokens, err error) {
	fail := func(format string, args ...any) (map[string]json.RawMessage, map[string]json.RawMessage, loginTokens, error) {
		return nil, nil, loginTokens{}, fmt.Errorf("--login %s: %s: %s", l.Kind.Agent, l.Path, fmt.Sprintf(format, args...))
	}
	data, err := readLoginFile(l.Path)
	if errors.Is(err, os.ErrNotExist) {
		return fail("no such file: log in on the host first (%s), or name the file: --login %s=PATH", l.Kind.LoginHow, l.Kind.Agent)
	}
	if err != nil {
		return fail("%v", err)
	}
	if json.Unmarshal(data, &top) != nil || top == nil {
		return fail("not the JSON %s writes", l.Kind.Agent)
	}
	obj = top
	if l.Kind.Nested != "" {
		obj = nil
		if raw, ok := top[l.Kind.Nested]; ok && json.Unmarshal(raw, &obj) != nil {
			return fail("not the JSON %s writes", l.Kind.Agent)
		}
	}
	str := func(k string) string {
		var v string
		_ = json.Unmarshal(obj[k], &v)
		return v
	}
	t = loginTokens{ID: str("id_token"), Access: str("access_token"), Refresh: str("refresh_token")}
	if t.Access == "" || t.Refresh == "" || t.ID == "" && !l.Kind.IDOptional {
		return fail("no %s in it (access_token, refresh_token, id_token): log in on the host with %s", l.Kind.What, l.Kind.LoginHow)
	}
	for _, v := range t.all() {
		if err := checkValue(v); v != "" && err != nil {
			return fail("a token: %v", err)
		}
	}
	if l.Kind.OpaqueAccess == "" && !isJWT(t.Access) || t.ID != "" && !isJWT(t.ID) {
		return fail("its access_token or id_token is not a JWT")
	}
	return top, obj, t, nil
}

func readLoginFile(path string) ([]byte, error) {
	b, err := readRegular(path, maxLoginFile)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("larger than %d bytes", maxLoginFile)
	}
	return b, err
}

// isJWT says whether s is three non-empty base64url segments.
func isJWT(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=") != "" {
			return false
		}
	}
	return true
}

// jwtPlaceholder is tok's header and payload with sig for its signature.
func jwtPlaceholder(tok, sig string) string {
	return tok[:strings.LastIndexByte(tok, '.')+1] + sig
}

// current reads the tokens now in the host's file.
func (l *Login) current() (loginTokens, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _, t, err := l.read()
	return t, err
}

// GuestContent is the file the guest gets: the host's, its tokens placeholders, and nothing
// else of it but the fields the agent reads (an API key kept beside the login stays out).
func (l *Login) GuestContent() ([]byte, error) {
	l.mu.Lock()
	top, obj, t, err := l.read()
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	tokens := map[string]any{"access_token": l.accessPlaceholder(t.Access), "refresh_token": l.refreshMark()}
	if t.ID != "" {
		tokens["id_token"] = jwtPlaceholder(t.ID, l.idSig())
	}
	out := tokens
	if l.Kind.Nested != "" {
		for _, k := range l.Kind.GuestKeepNested {
			if v, ok := obj[k]; ok {
				tokens[k] = v
			}
		}
		out = map[string]any{l.Kind.Nested: tokens}
	}
	for _, k := range l.Kind.GuestKeep {
		if v, ok := top[k]; ok {
			out[k] = v
		}
	}
	for _, k := range l.Kind.GuestNull {
		out[k] = nil
	}
	return json.MarshalIndent(out, "", "  ")
}

// inject puts the current access (or id) token in place of its placeholder in req's
// Authorization: Bearer, and says whether it did.
func (l *Login) inject(req *http.Request, t loginTokens) bool {
	done := false
	for i, v := range req.Header["Authorization"] {
		scheme, tok, ok := strings.Cut(v, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			continue
		}
		tok = strings.TrimSpace(tok)
		sig := tok[strings.LastIndexByte(tok, '.')+1:]
		switch {
		case l.Kind.OpaqueAccess != "" && tok == l.accessPlaceholder(""):
			req.Header["Authorization"][i] = scheme + " " + t.Access
			done = true
		case !isJWT(tok):
		case sig == l.accessSig() && l.Kind.OpaqueAccess == "":
			req.Header["Authorization"][i] = scheme + " " + t.Access
			done = true
		case sig == l.idSig():
			req.Header["Authorization"][i] = scheme + " " + t.ID
			done = true
		}
	}
	return done
}

// isRefresh says whether req, to target, is a request to the login's token endpoint.
func (l *Login) isRefresh(target string, req *http.Request) bool {
	return target == l.Kind.TokenTarget && req.Method == http.MethodPost && req.URL.Path == l.Kind.TokenPath
}

// swapRefresh reads req's body (at most maxRefreshBody) and, when its refresh_token (JSON or
// a form) is the login's placeholder, puts the real one in: then it says true, and the
// answer must go through takeTokens. A body without the placeholder is sent on as it came.
func (l *Login) swapRefresh(req *http.Request, t loginTokens) (bool, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return false, nil
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxRefreshBody+1))
	req.Body.Close()
	if err != nil {
		return false, fmt.Errorf("reading the refresh request: %w", err)
	}
	if len(body) > maxRefreshBody {
		return false, fmt.Errorf("a token request larger than %d bytes", maxRefreshBody)
	}
	set := func(b []byte) {
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.ContentLength = int64(len(b))
		req.TransferEncoding = nil
		req.Header.Set("Content-Length", strconv.Itoa(len(b)))
	}
	set(body)
	if !bytes.Contains(body, []byte(l.refreshMark())) {
		return false, nil
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if d.Decode(&m) == nil {
		if m["refresh_token"] != l.refreshMark() {
			return false, errors.New("the refresh token's placeholder is somewhere but in refresh_token")
		}
		m["refresh_token"] = t.Refresh
		b, err := json.Marshal(m)
		if err != nil {
			return false, err
		}
		set(b)
	} else if q, err := url.ParseQuery(string(body)); err == nil && q.Get("refresh_token") == l.refreshMark() {
		q.Set("refresh_token", t.Refresh)
		set([]byte(q.Encode()))
	} else {
		return false, errors.New("the refresh token's placeholder is somewhere but in refresh_token")
	}
	// The answer is read here, whole: no compression to undo.
	req.Header.Set("Accept-Encoding", "identity")
	return true, nil
}

// takeTokens reads the token endpoint's answer to a refresh the relay put the real refresh
// token into. A success's tokens go into the host's file, and the body returned for the
// guest holds their placeholders instead; any other answer is returned as it came. An answer
// that cannot be read so is an error: nothing of it may reach the guest.
func (l *Login) takeTokens(resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLoginFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading the token endpoint's answer: %w", err)
	}
	if len(body) > maxLoginFile {
		return nil, fmt.Errorf("the token endpoint's answer is larger than %d bytes", maxLoginFile)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return nil, fmt.Errorf("the token endpoint's answer is encoded (%s)", ce)
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		if resp.StatusCode/100 == 2 {
			return nil, errors.New("the token endpoint's answer is not JSON")
		}
		return body, nil // an error page: no token in it
	}
	str := func(k string) (string, error) {
		v, ok := m[k]
		if !ok {
			return "", nil
		}
		s, ok := v.(string)
		if !ok || checkValue(s) != nil {
			return "", fmt.Errorf("the token endpoint's %s is not a token", k)
		}
		return s, nil
	}
	var nt loginTokens
	for k, p := range map[string]*string{"access_token": &nt.Access, "id_token": &nt.ID, "refresh_token": &nt.Refresh} {
		if *p, err = str(k); err != nil {
			return nil, err
		}
	}
	if nt == (loginTokens{}) {
		return body, nil
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("tokens in a %d answer", resp.StatusCode)
	}
	if nt.Access != "" && l.Kind.OpaqueAccess == "" && !isJWT(nt.Access) || nt.ID != "" && !isJWT(nt.ID) {
		return nil, errors.New("the token endpoint's access_token or id_token is not a JWT")
	}
	var expiresIn int64
	if n, ok := m["expires_in"].(json.Number); ok {
		expiresIn, _ = n.Int64()
	}
	if err := l.store(nt, expiresIn); err != nil {
		return nil, fmt.Errorf("keeping the refreshed tokens in %s: %w", l.Path, err)
	}
	if nt.Access != "" {
		m["access_token"] = l.accessPlaceholder(nt.Access)
	}
	if nt.ID != "" {
		m["id_token"] = jwtPlaceholder(nt.ID, l.idSig())
	}
	if nt.Refresh != "" {
		m["refresh_token"] = l.refreshMark()
	}
	return json.Marshal(m)
}

// store writes the tokens of nt that are set into the host's file, as the agent does after a
// refresh (Kind.LastRefresh now, Kind.ExpiryMillis expiresIn seconds from now), keeping every
// other field; through a new file renamed over it (the target of a link), owner-only.
func (l *Login) store(nt loginTokens, expiresIn int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	top, obj, _, err := l.read()
	if err != nil {
		return err
	}
	set := func(m map[string]json.RawMessage, k string, v any) { m[k], _ = json.Marshal(v) }
	for k, v := range map[string]string{"access_token": nt.Access, "id_token": nt.ID, "refresh_token": nt.Refresh} {
		if v != "" {
			set(obj, k, v)
		}
	}
	if l.Kind.Nested != "" {
		set(top, l.Kind.Nested, obj)
	}
	if l.Kind.LastRefresh != "" {
		set(top, l.Kind.LastRefresh, time.Now().UTC().Format(time.RFC3339Nano))
	}
	if l.Kind.ExpiryMillis != "" && expiresIn > 0 {
		set(top, l.Kind.ExpiryMillis, time.Now().Add(time.Duration(expiresIn)*time.Second).UnixMilli())
	}
	data, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return err
	}
	path, err := filepath.EvalSymlinks(l.Path)
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.lmcp-%x.tmp", path, serial())
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// loginScript is the guest script's part that writes each login's file with its
// placeholders (owner-only, through a new file moved over it) before the command runs; a
// failure is said, and the command runs (without the login).
func loginScript(logins []*Login) (string, error) {
	var b strings.Builder
	for _, l := range logins {
		content, err := l.GuestContent()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "__lmcp_login=%s; ( umask 077 && mkdir -p \"${__lmcp_login%%/*}\" && printf %%s %s | base64 -d > \"$__lmcp_login.lmcp-$$\" && mv -f \"$__lmcp_login.lmcp-$$\" \"$__lmcp_login\" ) || echo \"limactl-mcp: could not write %s's login file $__lmcp_login\" >&2; unset __lmcp_login\n",
			l.Kind.GuestFile, base64.StdEncoding.EncodeToString(content), l.Kind.Agent)
	}
	return b.String(), nil
}
