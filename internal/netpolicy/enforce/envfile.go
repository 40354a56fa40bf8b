package enforce

import (
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// ProxyEnv is the agent's environment for a policy, as KEY=VALUE lines: under allow, the
// variables that point curl, git (libcurl), pip, go, npm and most other HTTP clients at the
// proxy; under none (and open), nothing, since there is nowhere to go.
func ProxyEnv(p netpolicy.Policy, proxyAddr string) string {
	if p.Mode() != netpolicy.ModeAllow {
		return ""
	}
	url := "http://" + proxyAddr
	var b strings.Builder
	for _, kv := range [][2]string{
		{"http_proxy", url}, {"https_proxy", url},
		{"HTTP_PROXY", url}, {"HTTPS_PROXY", url},
		// npm reads its own settings before the variables above, and a user's .npmrc can
		// set them; these win over both.
		{"npm_config_proxy", url}, {"npm_config_https_proxy", url},
		{"no_proxy", netpolicy.NoProxy}, {"NO_PROXY", netpolicy.NoProxy},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	return b.String()
}
