// Package httpauth guards an HTTP handler with one static bearer token, for `serve --http`: a
// random token printed once (or kept in a file), compared in constant time.
//
// The check itself is the go-sdk's auth.RequireBearerToken middleware (so that the token
// information reaches the Streamable HTTP handler, which binds each MCP session to it); this
// package adds the verifier, the token files and the `WWW-Authenticate: Bearer` challenge that
// the SDK sends only when OAuth metadata is configured.
package httpauth

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TokenBytes is the number of random bytes in a generated token (hex-encoded: twice as many
// characters).
const TokenBytes = 32

// NewToken returns a new random token: TokenBytes random bytes, hex-encoded.
func NewToken() (string, error) {
	b := make([]byte, TokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// CheckToken reports whether token can be used as a bearer token: not empty, and no spaces or
// control characters (it has to fit in one Authorization header field).
func CheckToken(token string) error {
	if token == "" {
		return errors.New("the token is empty")
	}
	for _, r := range token {
		if r <= ' ' || r == 0x7f {
			return errors.New("the token contains spaces or control characters")
		}
	}
	return nil
}

// TokenFromFile returns the token on the first line of the file at path (surrounding spaces
// trimmed). When the file does not exist, it creates it (mode 0600) with a new token (NewToken)
// and reports created. A file that others than its owner can read is not refused, but
// reported by readableByOthers, for a warning.
func TokenFromFile(path string) (token string, created, readableByOthers bool, err error) {
	token, readableByOthers, err = readTokenFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return token, false, readableByOthers, err
	}
	token, err = NewToken()
	if err != nil {
		return "", false, false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Created in the meantime (another server started with the same file): use its token.
		token, readableByOthers, err = readTokenFile(path)
		return token, false, readableByOthers, err
	}
	if err != nil {
		return "", false, false, fmt.Errorf("creating the token file: %w", err)
	}
	_, werr := f.WriteString(token + "\n")
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(path)
		return "", false, false, fmt.Errorf("writing the token file %s: %w", path, err)
	}
	return token, true, false, nil
}

func readTokenFile(path string) (token string, readableByOthers bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, err
		}
		return "", false, fmt.Errorf("reading the token file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("reading the token file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", false, fmt.Errorf("token file %s is not a regular file", path)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	if sc.Scan() {
		token = strings.TrimSpace(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return "", false, fmt.Errorf("reading the token file %s: %w", path, err)
	}
	if err := CheckToken(token); err != nil {
		return "", false, fmt.Errorf("token file %s: first line: %w", path, err)
	}
	return token, st.Mode().Perm()&0o077 != 0, nil
}

// Require returns middleware that lets a request through only when its Authorization header
// is "Bearer TOKEN" with the given token, compared in constant time. Any other request gets
// 401 Unauthorized, a `WWW-Authenticate: Bearer` challenge and a one-line plain-text body that
// says what is wrong ("no bearer token", "invalid token: ..."). rejected, when not nil, is told
// about each rejected request (for logging).
func Require(token string, rejected func(r *http.Request, status int)) func(http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		// Comparing digests keeps the comparison constant-time whatever the lengths.
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			return nil, fmt.Errorf("%w: the bearer token does not match", auth.ErrInvalidToken)
		}
		// One user: the SDK then refuses a session used with another token (there is none).
		return &auth.TokenInfo{UserID: "limactl-mcp", Expiration: time.Now().Add(24 * time.Hour)}, nil
	}
	check := auth.RequireBearerToken(verify, nil)
	return func(next http.Handler) http.Handler {
		// The SDK's middleware calls inner with the writer it was given: a challengeWriter, which
		// inner unwraps, so that the MCP handler gets the server's own ResponseWriter (flushing
		// and the like untouched).
		inner := check(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if cw, ok := w.(*challengeWriter); ok {
				w = cw.ResponseWriter
			}
			next.ServeHTTP(w, r)
		}))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cw := &challengeWriter{ResponseWriter: w}
			inner.ServeHTTP(cw, r)
			if cw.status != 0 && rejected != nil {
				rejected(r, cw.status)
			}
		})
	}
}

// challengeWriter adds `WWW-Authenticate: Bearer` to a 401 response (RFC 6750, section 3) and
// records the status of a rejection.
type challengeWriter struct {
	http.ResponseWriter
	status int
}

func (c *challengeWriter) WriteHeader(code int) {
	c.status = code
	if code == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
		c.Header().Set("WWW-Authenticate", "Bearer")
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *challengeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
