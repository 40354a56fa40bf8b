package netpolicy

// CABundleVariables are the variables that point a client at a whole bundle of roots, which
// the agent's environment sets to a bundle that holds the session CA (the system's under a
// policy, one of the session's under open): OpenSSL's and curl's, Python requests', git's.
var CABundleVariables = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}

// NodeCAVariable is Node's, which adds the file's certificates to its own roots: it is given
// the session CA alone.
const NodeCAVariable = "NODE_EXTRA_CA_CERTS"

// CAEnv is the environment ("NAME=value") that tells the agent's clients of the session CA:
// caFile holds the CA alone, bundle the roots with it. The one list of these variables.
func CAEnv(caFile, bundle string) []string {
	env := []string{NodeCAVariable + "=" + caFile}
	for _, name := range CABundleVariables {
		env = append(env, name+"="+bundle)
	}
	return env
}

// NoProxy is what the agent reaches without the proxy, under every policy: the guest's
// loopback (no_proxy and NO_PROXY).
const NoProxy = "localhost,127.0.0.1,::1"
