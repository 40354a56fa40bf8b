package netpolicy

import (
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/keyauth"
)

// Secrets of a session (docs/secrets.md): the values stay on the host, in the session's
// relay; the guest gets only what is below. `net ensure --secrets-stdin` reads it as one JSON
// document on its standard input (never on a command line): the hosts whose connections the
// proxy hands to the relay, the session CA's certificate the guest trusts, and the
// placeholders for the agent's environment.
type SecretsSetup struct {
	// Hosts are the bound host:port (lower case, a DNS name, a port).
	Hosts []string `json:"hosts"`
	// RuleTargets are the host:port that method and path rules only name (Policy.RuleTargets):
	// the proxy hands their CONNECTs to the relay too, which terminates TLS with the session CA
	// and checks each request against the rules the proxy sends with it (nothing injected).
	RuleTargets []string `json:"rule_targets,omitempty"`
	// CAPEM is the session CA's certificate (PEM): public, the key stays on the host.
	CAPEM string `json:"ca_pem"`
	// Env are NAME=PLACEHOLDER for the agent's environment.
	Env []string `json:"env"`
	// Relay names the socket of this process's relay (RelaySocketName): each limactl-mcp
	// process of a session listens at its own, so that one ending, or setting up after
	// another, never takes the other's relay away. "" is the one socket of older builds.
	Relay string `json:"relay,omitempty"`
	// RelayPort is where this process's relay also listens on the host's loopback, reached
	// from the guest through the VM's NAT at RelayHost (relayauth.go; 0: the socket only), and
	// RelayKey the key both ends prove they hold there (hex): a secret of root's in the guest,
	// kept off every command line and out of every file the agent can read.
	RelayPort int    `json:"relay_port,omitempty"`
	RelayKey  string `json:"relay_key,omitempty"`
}

const (
	// SecretsBase is where root makes each agent's relay directory (SecretsDir).
	SecretsBase = "/run/limactl-mcp/secrets"
	// MaxSecretsSetup bounds the document ensure reads.
	MaxSecretsSetup = 64 << 10
	maxSecretHosts  = 64
	maxSecretEnv    = 64
)

// SecretsDir is the relay directory of an agent user: owned by the Lima user, 0700, so that no
// agent can reach the relay but through the proxy (root).
func SecretsDir(user string) string { return path.Join(SecretsBase, user) }

// RelaySocketName is the socket a relay named relay (SecretsSetup.Relay) listens on in
// SecretsDir: a streamlocal forward of its process's own SSH connection (sshd, as the Lima
// user, listens there). relay is "" or checked (CheckRelayName).
func RelaySocketName(relay string) string {
	if relay == "" {
		return "relay.sock"
	}
	return "relay-" + relay + ".sock"
}

// RelaySocket is the socket of an agent user's relay named relay.
func RelaySocket(user, relay string) string {
	return path.Join(SecretsDir(user), RelaySocketName(relay))
}

// relayNamePattern: the name a process gives its relay (NewRelayName), the part of a socket
// name root builds a path from.
var relayNamePattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// CheckRelayName refuses a relay name that is not "" or 16 lower-case hex digits.
func CheckRelayName(relay string) error {
	if relay != "" && !relayNamePattern.MatchString(relay) {
		return fmt.Errorf("relay name %q is not 16 lower-case hex digits", truncateText(relay, 40))
	}
	return nil
}

var (
	envNamePattern     = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,63}$`)
	placeholderPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{22,256}$`)
)

// placeholderMark is secrets.PlaceholderMark (not imported: the runner links this package).
const placeholderMark = "LMCPPLACEHOLDER"

// ParseSecretsSetup reads and checks the document (from the Lima user: checked all the same).
func ParseSecretsSetup(data []byte) (*SecretsSetup, error) {
	if len(data) > MaxSecretsSetup {
		return nil, fmt.Errorf("the secrets setup is larger than %d bytes", MaxSecretsSetup)
	}
	var s SecretsSetup
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("the secrets setup is not JSON: %w", err)
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Check refuses a setup that is not what the host makes.
func (s *SecretsSetup) Check() error {
	if n := len(s.Hosts) + len(s.RuleTargets); n == 0 || n > maxSecretHosts {
		return fmt.Errorf("the secrets setup needs 1 to %d bound hosts and rule targets", maxSecretHosts)
	}
	for _, h := range append(slices.Clone(s.Hosts), s.RuleTargets...) {
		if _, _, err := SplitBoundHost(h); err != nil {
			return err
		}
	}
	block, rest := pem.Decode([]byte(s.CAPEM))
	if block == nil || block.Type != "CERTIFICATE" || strings.TrimSpace(string(rest)) != "" || len(s.CAPEM) > 16<<10 {
		return fmt.Errorf("the secrets setup's CA is not one PEM certificate")
	}
	if err := CheckRelayName(s.Relay); err != nil {
		return fmt.Errorf("the secrets setup: %w", err)
	}
	if s.RelayPort < 0 || s.RelayPort > 65535 {
		return fmt.Errorf("the secrets setup's relay port %d is not a port", s.RelayPort)
	}
	if _, err := keyauth.ParseKey(s.RelayKey); (s.RelayPort > 0) != (err == nil) {
		return errors.New("the secrets setup needs a relay key with its relay port, and only then")
	}
	if len(s.Env) > maxSecretEnv {
		return fmt.Errorf("the secrets setup has more than %d placeholders", maxSecretEnv)
	}
	for _, kv := range s.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !envNamePattern.MatchString(name) || !placeholderPattern.MatchString(value) || !strings.Contains(value, placeholderMark) {
			return fmt.Errorf("the secrets setup's environment holds %q: not NAME=PLACEHOLDER", truncateText(kv, 40))
		}
	}
	return nil
}

// BoundNames are the names of the bound hosts (no port, each once): what joins an allowlist.
func (s *SecretsSetup) BoundNames() []string { return BoundNames(s.Hosts) }

// BoundNames are the names of bound host:port (no port, each once; one that does not check out
// left out): what joins an allowlist.
func BoundNames(hostPorts []string) []string {
	var names []string
	for _, hp := range hostPorts {
		if host, _, err := SplitBoundHost(hp); err == nil && !slices.Contains(names, host) {
			names = append(names, host)
		}
	}
	return names
}

// SplitBoundHost checks a bound host:port (a lower-case DNS name and a port) and splits it.
func SplitBoundHost(hp string) (string, int, error) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("bound host %q is not host:port", truncateText(hp, 80))
	}
	host, portText := hp[:i], hp[i+1:]
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != portText {
		return "", 0, fmt.Errorf("bound host %q: not a port", truncateText(hp, 80))
	}
	if host != strings.ToLower(host) || checkHostName(host) != nil {
		return "", 0, fmt.Errorf("bound host %q: not a lower-case DNS name", truncateText(hp, 80))
	}
	if _, ok := parseIP(host); ok {
		return "", 0, fmt.Errorf("bound host %q: an IP address is never bound", truncateText(hp, 80))
	}
	return host, port, nil
}

// WithHosts is the allow policy p with hosts (names) added to its list (bound hosts join the
// allowlist); other modes are returned as they are.
func (p Policy) WithHosts(hosts []string) Policy {
	if p.mode != ModeAllow {
		return p
	}
	out := Policy{mode: ModeAllow, entries: append([]string(nil), p.entries...)}
	for _, h := range hosts {
		if !p.Allows(h) {
			out.entries = append(out.entries, strings.TrimSuffix(strings.ToLower(h), "."))
		}
	}
	out.entries = dedup(out.entries)
	out.setHosts(expand(out.entries))
	return out
}

func truncateText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
