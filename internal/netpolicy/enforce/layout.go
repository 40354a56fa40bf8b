package enforce

import (
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// Layout is where the guest side keeps its state. Real guests use DefaultLayout; tests point
// it at a temporary directory.
type Layout struct {
	ConfigDir string // the policy (NAME.json) and environment (NAME.env) files, root's
	LogDir    string // the per-user logs, NAME.jsonl (and NAME.jsonl.1)
	HomeBase  string // the agent users' home directories
	// ProxyAddrs are where the proxy listens: a port below 1024, so that no user but root can
	// listen there even while the proxy is down.
	ProxyAddrs []string
	// Secrets is where the session relays' directories are (secrets.go); TrustDir the system's
	// directory of extra CA certificates, TrustBundle the bundle TrustTool makes of them;
	// UpdateTrust runs TrustTool (off in tests).
	Secrets     string
	TrustDir    string
	TrustBundle string
	TrustTool   []string
	UpdateTrust bool
	// RelayHost is the name the proxy reaches the relays' ports on the host by
	// (netpolicy.RelayHost; "": their sockets only).
	RelayHost string
}

// DefaultLayout is the layout of a real guest.
func DefaultLayout() Layout {
	l := Layout{
		ConfigDir:   "/etc/limactl-mcp/net",
		LogDir:      "/var/log/limactl-mcp/net",
		HomeBase:    netpolicy.AgentHomeBase,
		ProxyAddrs:  []string{"127.0.0.1:929", "[::1]:929"},
		Secrets:     netpolicy.SecretsBase,
		UpdateTrust: true,
		RelayHost:   netpolicy.RelayHost,
	}
	l.TrustDir, l.TrustBundle, l.TrustTool = trustStore(findTool)
	return l
}

// trustStore is where the guest's system CA store takes an extra certificate, the bundle it
// makes, and the command that makes it: Debian, Ubuntu and Alpine's update-ca-certificates, or
// Fedora's (and RHEL's) update-ca-trust. Without either, Debian's, whose tool's absence
// updateTrust then reports with the fix.
func trustStore(find func(string) (string, error)) (dir, bundle string, tool []string) {
	if _, err := find("update-ca-certificates"); err != nil {
		if p, err := find("update-ca-trust"); err == nil {
			return "/etc/pki/ca-trust/source/anchors", "/etc/pki/tls/certs/ca-bundle.crt", []string{p, "extract"}
		}
	}
	return "/usr/local/share/ca-certificates", "/etc/ssl/certs/ca-certificates.crt", []string{"update-ca-certificates"}
}

// ProxyAddr is the address the agent's environment points at (the first of ProxyAddrs).
func (l Layout) ProxyAddr() string { return l.ProxyAddrs[0] }

func (l Layout) policyFile(user string) string { return filepath.Join(l.ConfigDir, user+".json") }
func (l Layout) envFile(user string) string    { return filepath.Join(l.ConfigDir, user+".env") }
func (l Layout) logFile(user string) string    { return filepath.Join(l.LogDir, user+".jsonl") }
func (l Layout) home(user string) string       { return filepath.Join(l.HomeBase, user) }

// agentUserPattern is the only form of user name the guest side creates or touches: the host
// picks "lmcp-" and hex, and nothing else on a guest is called that.
var agentUserPattern = regexp.MustCompile(`^lmcp-[a-z0-9]{1,24}$`)

// CheckUserName refuses a name that is not an agent user's.
func CheckUserName(name string) error {
	if !agentUserPattern.MatchString(name) {
		return fmt.Errorf("user name %q is not an agent user's (lmcp- and 1 to 24 lower-case letters or digits)", name)
	}
	return nil
}
