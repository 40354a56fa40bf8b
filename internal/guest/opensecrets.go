package guest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// openSecretsDir is where a connection's files for its secrets under open are kept in the
// guest, relative to the Lima user's home: one directory per connection (two processes of one
// session never share one), removed when the connection ends and, when it could not be, by a
// later connection after openSecretsKeepDays.
const (
	openSecretsDir      = ".cache/limactl-mcp/secrets"
	openSecretsKeepDays = 7
	// openSecretsCleanTimeout bounds the removal of the directory when the connection ends.
	openSecretsCleanTimeout = 5 * time.Second
)

// caBundles are the system CA bundles the guest's clients read (Debian and Ubuntu, Fedora,
// others): the first one found, with the session CA, makes the bundle SSL_CERT_FILE names.
var caBundles = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}

// UseOpenSecrets gives the connection a session's secrets under the network policy "open"
// (opensecrets.go, openproxy.go): from its next connect it is a connection of our own, which
// carries the proxy of the bound hosts, and the runner's commands get the placeholders, the
// proxy and the CA in their environment (EnvFile). A connection already made is dropped. Not
// for a connection with an agent (under a policy the agent's set-up carries them:
// Agent.Secrets).
func (c *Conn) UseOpenSecrets(s *AgentSecrets) error {
	if c.opts.Agent != nil {
		return errors.New("secrets under open: the connection works as an agent user")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.openSecrets = s
	if c.cur != nil {
		c.cur.close()
		c.cur = nil
	}
	return nil
}

// EnvFile is the guest file of KEY=VALUE lines the connection's commands start with: the
// agent's environment file under a policy, the secrets' under open with secrets, "" otherwise
// (connecting if needed).
func (c *Conn) EnvFile(ctx context.Context) (string, error) {
	if c.opts.Agent == nil && c.openSecretsOf() == nil {
		return "", nil
	}
	l, err := c.get(ctx)
	if err != nil {
		return "", err
	}
	if l.setup != nil {
		return l.setup.EnvFile, nil
	}
	return l.envFile, nil
}

func (c *Conn) openSecretsOf() *AgentSecrets {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.openSecrets
}

// startOpenSecrets puts the secrets' proxy in place on l (before its runner starts): sshd
// listens on a port of the guest's loopback for this connection, and a directory of the Lima
// user's gets the session CA, a CA bundle with it, and the environment file naming them, the
// proxy and the placeholders (never a value: the guest never gets one).
func (l *link) startOpenSecrets(ctx context.Context, s *AgentSecrets) error {
	dialer, ok := l.t.(sshlink.GuestDialer)
	if !ok {
		return errors.New("secrets under open need a connection that can dial from the guest")
	}
	ln, err := l.t.ListenTCP("127.0.0.1:0")
	if err != nil {
		return err
	}
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || addr.Port <= 0 || addr.Port > 65535 {
		ln.Close()
		return fmt.Errorf("the guest's sshd listens on %v, not a port of its loopback", ln.Addr())
	}
	l.closers = append(l.closers, newOpenProxy(s, dialer.DialGuest, l.log).run(ln))

	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	q := shellquote.Quote
	var bundles strings.Builder
	for _, f := range caBundles {
		bundles.WriteString(" " + q(f))
	}
	script := `set -e; umask 077; base="$HOME"/` + q(openSecretsDir) + `; mkdir -p "$base"
find "$base" -mindepth 1 -maxdepth 1 -type d -mtime +` + fmt.Sprint(openSecretsKeepDays) + ` -exec rm -rf {} + 2>/dev/null || true
d="$base/"` + id + `; mkdir "$d"; cat > "$d/ca.pem"; sys=""
for f in` + bundles.String() + `; do if [ -r "$f" ]; then sys="$f"; break; fi; done
{ if [ -n "$sys" ]; then cat "$sys"; fi; cat "$d/ca.pem"; } > "$d/bundle.pem"
printf '%s\n' "$d"`
	out, err := l.t.Stream(ctx, "sh -c "+q(script), strings.NewReader(s.Setup.CAPEM))
	if err != nil {
		return fmt.Errorf("writing the session CA into the guest: %w", err)
	}
	dir, err := openSecretsDirOf(out, id)
	if err != nil {
		return err
	}
	env := openSecretsEnv(dir, addr.Port, s.Setup.Env)
	if _, err := l.t.Stream(ctx, "umask 077 && cat > "+q(dir+"/env"), strings.NewReader(env)); err != nil {
		return fmt.Errorf("writing the secrets' environment into the guest: %w", err)
	}
	l.envFile = dir + "/env"
	t := l.t
	l.closers = append(l.closers, func() {
		cctx, cancel := context.WithTimeout(context.Background(), openSecretsCleanTimeout)
		defer cancel()
		_, _ = t.Output(cctx, "rm -rf "+q(dir))
	})
	return nil
}

// openSecretsDirOf checks the guest's answer naming the secrets' directory: one line, a clean
// absolute path ending in the id this side chose, in a directory the guest chose (its home).
func openSecretsDirOf(out []byte, id string) (string, error) {
	dir := strings.TrimSuffix(string(out), "\n")
	if !path.IsAbs(dir) || path.Clean(dir) != dir || path.Base(dir) != id || strings.ContainsAny(dir, "\n\r\x00") || len(dir) > 4096 {
		return "", fmt.Errorf("the guest named %q for the secrets' directory", sshlink.Truncate(dir, 200))
	}
	return dir, nil
}

// openSecretsEnv is the environment of the agent's commands under open with secrets: HTTPS
// through the connection's proxy (plain HTTP is not: nothing is bound to it), the CA for the
// clients that read these variables, and the placeholders.
func openSecretsEnv(dir string, port int, placeholders []string) string {
	proxy := fmt.Sprintf("http://127.0.0.1:%d", port)
	var b strings.Builder
	for _, kv := range [][2]string{
		{"https_proxy", proxy}, {"HTTPS_PROXY", proxy},
		// npm reads its own settings before the variables; these win over a user's .npmrc.
		{"npm_config_https_proxy", proxy},
		{"no_proxy", netpolicy.NoProxy}, {"NO_PROXY", netpolicy.NoProxy},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	for _, kv := range append(netpolicy.CAEnv(dir+"/ca.pem", dir+"/bundle.pem"), placeholders...) {
		b.WriteString(kv + "\n")
	}
	return b.String()
}
