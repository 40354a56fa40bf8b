package netpolicy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// An HTTP rule is an allow-list entry that lets plain HTTP requests through by method and path:
// HOST[:PORT][/PATH][:METHODS], with METHODS "ro" (GET and HEAD) or methods joined by '+'
// (GET+POST), and PATH a path where each '*' stands for any run of characters, '/' included
// (/simple/* a prefix, /*/git-upload-pack any repository's). It allows requests only: an HTTPS
// tunnel (CONNECT) to its host carries requests the guest's proxy cannot read, so it is refused
// there, or handed to the session's relay on the host, which terminates TLS and checks each
// request (docs/network.md "Method and path rules").
type httpRule struct {
	host    string   // canonical host, wildcard or IP address
	port    int      // 0: every port
	path    string   // "" every path; each '*' is any run of characters
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

// maxRuleStars bounds the '*' of a rule's path (each is a scan of the request's path).
const maxRuleStars = 4

// checkRulePath checks a rule's path: it starts with '/', holds no dot segment, no
// percent-encoding, no ':' or ',' (which the entry's syntax uses), no space, and at most
// maxRuleStars '*', never two side by side.
func checkRulePath(p string) error {
	if len(p) > maxRulePath {
		return fmt.Errorf("path %q is longer than %d characters", p[:40]+"...", maxRulePath)
	}
	if n := strings.Count(p, "*"); n > maxRuleStars {
		return fmt.Errorf("path %q: at most %d '*'", p, maxRuleStars)
	}
	if strings.Contains(p, "**") {
		return fmt.Errorf("path %q: '**' (one '*' already spans any characters, '/' included)", p)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("/-._~!$&'()+;=@*", c) >= 0:
		default:
			return fmt.Errorf("path %q: character %q is not allowed in a rule's path (no ':', ',', '%%', '?', '#' or space)", p, c)
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("path %q: no '.' or '..' segment", p)
		}
	}
	return nil
}

// ExactRule is the rule that allows one request, method on path to host:port, and no other
// (host:port/path:METHOD: a rule without a port is for every port), for a
// person allowing a request they saw refused (`watch`). The method and path are an agent's,
// so what would make the rule allow more is refused: a method that is not one method (GET+PUT,
// ro), a path with '*' (a pattern), or anything a rule's path cannot hold.
func ExactRule(host string, port int, method, path string) (string, error) {
	if method == "" || len(method) > 20 || strings.Trim(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" || method == "CONNECT" {
		return "", fmt.Errorf("the method %q is not one method a rule names", method)
	}
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("the path %q does not start with '/'", path)
	}
	if strings.Contains(path, "*") {
		return "", fmt.Errorf("the path %q holds '*', which a rule reads as a pattern", path)
	}
	if err := checkRulePath(path); err != nil {
		return "", err
	}
	hostEntry, err := normalizeEntry(host)
	if err != nil || strings.ContainsAny(host, ",@*/: \t") || strings.ContainsAny(hostEntry, ",@*/:") {
		return "", fmt.Errorf("the host %q is not one host name", host)
	}
	if port <= 0 || port > 65535 {
		return "", fmt.Errorf("the port %d is not a port", port)
	}
	return joinRule(hostEntry, port) + path + ":" + method, nil
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
	return matchPathGlob(r.path, path)
}

// matchPathGlob says whether path matches pattern, where each '*' stands for any run of
// characters ('/' included) and every other character for itself. The pieces between the
// stars are found left to right, each at its first place after the one before: for a pattern
// whose last piece must end the path, that first fit leaves the most room, so it never misses
// a match.
func matchPathGlob(pattern, path string) bool {
	pieces := strings.Split(pattern, "*")
	if len(pieces) == 1 {
		return path == pattern
	}
	first, last := pieces[0], pieces[len(pieces)-1]
	if !strings.HasPrefix(path, first) {
		return false
	}
	rest := path[len(first):]
	for _, mid := range pieces[1 : len(pieces)-1] {
		i := strings.Index(rest, mid)
		if i < 0 {
			return false
		}
		rest = rest[i+len(mid):]
	}
	return len(rest) >= len(last) && strings.HasSuffix(rest, last)
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

// HTTPSPort is the port a rule without one is read on for HTTPS (its relay's target).
const HTTPSPort = 443

// RuleTargets are the host:port whose HTTPS the session's relay terminates to check each
// request against the rules (docs/network.md "Read-only HTTPS"): the host of every rule that
// names one DNS name (not a wildcard, not an IP address: the session CA signs names), on the
// rule's port or HTTPSPort, when no plain entry allows that host:port already (then every
// request goes through as a tunnel). Sorted, each once.
func (p Policy) RuleTargets() []string {
	if p.mode != ModeAllow {
		return nil
	}
	var out []string
	for _, r := range p.rules {
		if strings.HasPrefix(r.host, "*.") {
			continue
		}
		if _, ip := parseIP(r.host); ip {
			continue
		}
		port := r.port
		if port == 0 {
			port = HTTPSPort
		}
		if p.AllowsPort(r.host, port) {
			continue
		}
		if t := r.host + ":" + strconv.Itoa(port); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// RulesPolicy is the policy of the rules alone (canonical entries, as RulesFor gives them): what
// the session's relay checks a terminated connection's requests with. A plain entry among them
// is refused (the relay must not widen what the proxy decided).
func RulesPolicy(rules []string) (Policy, error) {
	if len(rules) == 0 {
		return Policy{}, fmt.Errorf("no rules")
	}
	p, err := Parse("allow:" + strings.Join(rules, ","))
	if err != nil {
		return Policy{}, err
	}
	if len(p.plain) > 0 {
		return Policy{}, fmt.Errorf("%q is not a method or path rule", p.plain[0])
	}
	return p, nil
}
