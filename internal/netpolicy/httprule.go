package netpolicy

import (
	"fmt"
	"slices"
	"strings"
)

// An HTTP rule is an allow-list entry that lets plain HTTP requests through by method and path:
// HOST[:PORT][/PATH][:METHODS], with METHODS "ro" (GET and HEAD) or methods joined by '+'
// (GET+POST), and PATH a path that a final '*' makes a prefix (/simple/*). It allows requests
// only: an HTTPS tunnel (CONNECT) to its host is refused, since the proxy cannot read the
// requests inside one (docs/network.md "Method and path rules").
type httpRule struct {
	host    string   // canonical host, wildcard or IP address
	port    int      // 0: every port
	path    string   // "" every path; a final '*' makes it a prefix
	methods []string // nil every method; sorted
}

// readOnlyMethods are the methods of "ro".
var readOnlyMethods = []string{"GET", "HEAD"}

// maxRulePath bounds a rule's path.
const maxRulePath = 1024

// cutRule parses raw as an HTTP rule when it has a path or a methods suffix; ok is false when
// it is a plain entry (a host with an optional port), left to normalizeEntry.
func cutRule(raw string) (r httpRule, ok bool, err error) {
	rest := raw
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && isMethodList(rest[i+1:]) {
		methods, err := parseMethods(rest[i+1:])
		if err != nil {
			return httpRule{}, false, err
		}
		r.methods, rest, ok = methods, rest[:i], true
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		if err := checkRulePath(rest[i:]); err != nil {
			return httpRule{}, false, err
		}
		r.path, rest, ok = rest[i:], rest[:i], true
		if r.path == "/*" {
			r.path = "" // every path
		}
	}
	if !ok {
		return httpRule{}, false, nil
	}
	if strings.HasPrefix(rest, "@") {
		return httpRule{}, false, fmt.Errorf("a preset takes no method or path: give host entries instead")
	}
	hostEntry, err := normalizeEntry(rest)
	if err != nil {
		return httpRule{}, false, err
	}
	r.host, r.port = splitRule(hostEntry)
	return r, true, nil
}

// isMethodList says whether s (what follows the last ':') names methods rather than a port:
// "ro", or upper-case letters and '+' ("GET+POST").
func isMethodList(s string) bool {
	if s == "ro" {
		return true
	}
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c == '+') {
			return false
		}
	}
	return true
}

// parseMethods reads "ro" or METHOD[+METHOD...] (upper case, as HTTP spells them).
func parseMethods(s string) ([]string, error) {
	if s == "ro" {
		return slices.Clone(readOnlyMethods), nil
	}
	var out []string
	for _, m := range strings.Split(s, "+") {
		if m == "" {
			return nil, fmt.Errorf("methods %q: an empty method (give ro, or METHOD+METHOD such as GET+HEAD)", s)
		}
		if len(m) > 20 {
			return nil, fmt.Errorf("methods %q: %q is not a method (upper case, as HTTP spells them: GET, HEAD, POST...; or ro for GET+HEAD)", s, m)
		}
		if m == "CONNECT" {
			return nil, fmt.Errorf("methods %q: CONNECT is a tunnel, not a request a rule can allow (give the host without methods)", s)
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out, nil
}

// checkRulePath checks a rule's path: it starts with '/', holds no dot segment, no
// percent-encoding, no ':' or ',' (which the entry's syntax uses), no space, and '*' only at
// its end.
func checkRulePath(p string) error {
	if len(p) > maxRulePath {
		return fmt.Errorf("path %q is longer than %d characters", p[:40]+"...", maxRulePath)
	}
	body := strings.TrimSuffix(p, "*")
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("/-._~!$&'()+;=@", c) >= 0:
		case c == '*':
			return fmt.Errorf("path %q: '*' is allowed only at the end (a prefix)", p)
		default:
			return fmt.Errorf("path %q: character %q is not allowed in a rule's path (no ':', ',', '%%', '?', '#' or space)", p, c)
		}
	}
	for _, seg := range strings.Split(body, "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("path %q: no '.' or '..' segment", p)
		}
	}
	return nil
}

// String is the rule's canonical entry.
func (r httpRule) String() string {
	s := joinRule(r.host, r.port)
	if r.path != "" {
		s += r.path
	}
	switch {
	case r.methods == nil:
		if r.path == "" {
			s += "/*" // a rule still: every path, requests only
		}
	case slices.Equal(r.methods, readOnlyMethods):
		s += ":ro"
	default:
		s += ":" + strings.Join(r.methods, "+")
	}
	return s
}

// matchesHost says whether the rule is for host (canonical, as AllowsPort makes it) on port.
func (r httpRule) matchesHost(want string, port int) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	if domain, ok := strings.CutPrefix(r.host, "*."); ok {
		return strings.HasSuffix(want, "."+domain)
	}
	return r.host == want
}

// allowsRequest says whether the rule lets method on path (a request's, checked by
// RequestPath) through.
func (r httpRule) allowsRequest(method, path string) bool {
	if r.methods != nil && !slices.Contains(r.methods, method) {
		return false
	}
	if r.path == "" {
		return true
	}
	if prefix, ok := strings.CutSuffix(r.path, "*"); ok {
		return strings.HasPrefix(path, prefix)
	}
	return path == r.path
}

// RequestPath checks the path of a plain HTTP request (its escaped path, as sent) before a
// rule's path is compared with it: a path the server could read otherwise than the proxy
// (a dot segment, an encoded '/', '.' or '\', a backslash) is refused, not guessed at.
func RequestPath(escaped string) error {
	if escaped == "" {
		return nil
	}
	if !strings.HasPrefix(escaped, "/") {
		return fmt.Errorf("the request's path %q does not start with '/'", truncateText(escaped, 80))
	}
	lower := strings.ToLower(escaped)
	for _, bad := range []string{"%2f", "%2e", "%5c", "\\"} {
		if strings.Contains(lower, bad) {
			return fmt.Errorf("the request's path %q holds %q, which a server may read as a path separator or dot: refused under a path rule", truncateText(escaped, 80), bad)
		}
	}
	for _, seg := range strings.Split(escaped, "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("the request's path %q has a dot segment: refused under a path rule", truncateText(escaped, 80))
		}
	}
	return nil
}
