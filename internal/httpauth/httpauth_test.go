package httpauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

func TestNewToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	if !hex64.MatchString(a) || !hex64.MatchString(b) || a == b {
		t.Fatalf("tokens %q, %q: want two different 64-digit hex strings", a, b)
	}
	if err := CheckToken(a); err != nil {
		t.Fatal(err)
	}
}

func TestCheckToken(t *testing.T) {
	for tok, ok := range map[string]bool{"abc": true, "a-b_c.d~e+f/g=": true, "": false, "a b": false, "a\tb": false, "a\x7fb": false} {
		if err := CheckToken(tok); (err == nil) != ok {
			t.Errorf("CheckToken(%q) = %v, want ok=%v", tok, err, ok)
		}
	}
}

func TestRequire(t *testing.T) {
	const token = "s3cret-token"
	var rejected []int
	var mu sync.Mutex
	h := Require(token, func(_ *http.Request, status int) {
		mu.Lock()
		defer mu.Unlock()
		rejected = append(rejected, status)
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The inner handler gets the server's own writer, not the challenge wrapper.
		if _, ok := w.(*challengeWriter); ok {
			t.Errorf("the inner handler got the challengeWriter")
		}
		if _, ok := w.(http.Flusher); !ok {
			t.Errorf("the inner handler's writer cannot flush")
		}
		io.WriteString(w, "ok")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, tc := range []struct {
		auth     string
		status   int
		wantBody string
	}{
		{"Bearer " + token, 200, "ok"},
		{"bearer " + token, 200, "ok"},
		{"", 401, "no bearer token"},
		{"Bearer", 401, "no bearer token"},
		{"Token " + token, 401, "no bearer token"},
		{"Bearer " + token + " extra", 401, "no bearer token"},
		{"Bearer wrong", 401, "invalid token: the bearer token does not match"},
		{"Bearer " + token[:len(token)-1], 401, "invalid token"},
		{"Bearer " + token + token, 401, "invalid token"},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/anything", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.wantBody) {
			t.Errorf("Authorization %q: %d %q, want %d %q", tc.auth, resp.StatusCode, body, tc.status, tc.wantBody)
		}
		challenge := resp.Header.Get("WWW-Authenticate")
		if (tc.status == 401) != (challenge == "Bearer") {
			t.Errorf("Authorization %q: WWW-Authenticate %q on a %d", tc.auth, challenge, resp.StatusCode)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rejected) != 7 {
		t.Errorf("rejected callback called %d times (%v), want 7", len(rejected), rejected)
	}
}

func TestTokenFromFile(t *testing.T) {
	dir := t.TempDir()

	p := filepath.Join(dir, "new")
	tok, created, open, err := TokenFromFile(p)
	if err != nil || !created || open {
		t.Fatalf("new file: %q %v %v %v", tok, created, open, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new file: %v %v, want mode 0600", st, err)
	}
	data, _ := os.ReadFile(p)
	if string(data) != tok+"\n" {
		t.Fatalf("file holds %q, token %q", data, tok)
	}
	again, created, _, err := TokenFromFile(p)
	if err != nil || created || again != tok {
		t.Fatalf("second read: %q %v %v, want %q", again, created, err, tok)
	}

	p = filepath.Join(dir, "crlf")
	if err := os.WriteFile(p, []byte("\tabc-123 \r\nnext\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	tok, created, open, err = TokenFromFile(p)
	if err != nil || created || !open || tok != "abc-123" {
		t.Fatalf("crlf: %q %v %v %v, want abc-123, readable by others", tok, created, open, err)
	}

	for name, content := range map[string]string{"empty": "", "blank": "   \nx\n", "spaces": "a b\n"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if tok, _, _, err := TokenFromFile(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %q %v, want an error naming the file", name, tok, err)
		}
	}
	if _, _, _, err := TokenFromFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	if _, _, _, err := TokenFromFile(filepath.Join(dir, "missing", "token")); err == nil {
		t.Errorf("file in a missing directory: no error")
	}
}
