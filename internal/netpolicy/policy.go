package netpolicy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Mode is what a policy does with the agent's network traffic.
type Mode int

const (
	// ModeOpen leaves the agent's network as the guest's: no user, no rules, no proxy.
	ModeOpen Mode = iota
	// ModeNone lets the agent reach guest loopback only.
	ModeNone
	// ModeAllow lets it reach guest loopback and, through the proxy, the listed hosts.
	ModeAllow
)

// Policy is a parsed network policy. The zero value is open.
type Policy struct {
	mode Mode
	// entries are normalized (lower case, no trailing dot, IPs in netip's form), without
	// duplicates, in the order first given: String depends on that to round-trip. A preset
	// stays as given ("@go"): the person sees the policy they wrote.
	entries []string
	// hosts are entries with every preset replaced by its hosts, without duplicates.
	hosts []string
	// plain are the hosts that are not HTTP rules: what Allows matches; rules are the others,
	// which AllowsRequest matches too (httprule.go).
	plain []string
	rules []httpRule
}

const specHelp = "a network policy is open, none, or allow:NAME[,NAME...] (host names, *.domain for its subdomains, IP addresses, each with an optional :PORT, then for plain HTTP an optional /PATH[*] and :ro or :METHOD[+METHOD...], or @PRESET: limactl mcp network presets lists them)"

// Parse reads a policy spec: "open", "none" or "allow:NAME[,NAME...]". A NAME is a host name
// (case-insensitive, a trailing dot ignored), "*." followed by a domain, which matches that
// domain's subdomains but not the domain itself (*.pypi.org matches files.pypi.org, not
// pypi.org: list both to allow both), an IP address, matched exactly, or "@" and a preset's
// name (presets.go), which stands for that preset's hosts. A host name, wildcard or IP address
// may end with :PORT (an IPv6 address in brackets: [::1]:443): that entry allows that port
// only; without a port, every port is allowed.
func Parse(spec string) (Policy, error) {
	switch spec {
	case "open":
		return Policy{mode: ModeOpen}, nil
	case "none":
		return Policy{mode: ModeNone}, nil
	case "":
		return Policy{}, fmt.Errorf("empty network policy: %s", specHelp)
	}
	list, ok := strings.CutPrefix(spec, "allow:")
	if !ok {
		return Policy{}, fmt.Errorf("network policy %q: %s", spec, specHelp)
	}
	if list == "" {
		return Policy{}, fmt.Errorf("network policy %q lists no host: name at least one after allow:, or use none", spec)
	}
	p := Policy{mode: ModeAllow}
	seen := map[string]bool{}
	for _, raw := range strings.Split(list, ",") {
		entry, err := normalizeEntry(raw)
		if err != nil {
			return Policy{}, fmt.Errorf("network policy %q: %w", spec, err)
		}
		if !seen[entry] {
			seen[entry] = true
			p.entries = append(p.entries, entry)
		}
	}
	p.setHosts(expand(p.entries))
	return p, nil
}

// setHosts sets the expanded hosts and sorts them into plain entries and HTTP rules.
func (p *Policy) setHosts(hosts []string) {
	p.hosts, p.plain, p.rules = hosts, nil, nil
	for _, h := range hosts {
		if r, ok, err := cutRule(h); ok && err == nil {
			p.rules = append(p.rules, r)
		} else {
			p.plain = append(p.plain, h)
		}
	}
}

// normalizeEntry checks one NAME of an allow list and returns its canonical form.
func normalizeEntry(raw string) (string, error) {
	if raw == "" {
		return "", fmt.Errorf("an empty name in the list (two commas, or a comma at an end)")
	}
	if name, ok := strings.CutPrefix(raw, "@"); ok {
		if strings.Contains(name, ":") {
			return "", fmt.Errorf("%q: a preset stands for hosts on every port; give host:port entries instead", raw)
		}
		return presetEntry(raw, strings.ToLower(name))
	}
	if strings.ContainsAny(raw, " \t\r\n") {
		return "", fmt.Errorf("%q: names contain no spaces (separate them with commas only)", raw)
	}
	if addr, ok := parseIP(raw); ok {
		return addr.String(), nil
	}
	if strings.Contains(raw, "://") {
		return "", fmt.Errorf("%q: give a host name, not a URL", raw)
	}
	if rule, ok, err := cutRule(raw); ok || err != nil {
		if err != nil {
			return "", fmt.Errorf("%q: %w", raw, err)
		}
		return rule.String(), nil
	}
	if strings.Contains(raw, "/") {
		return "", fmt.Errorf("%q: give a host name, not a URL", raw)
	}
	if host, port, ok, err := cutPort(raw); ok || err != nil {
		if err != nil {
			return "", fmt.Errorf("%q: %w", raw, err)
		}
		h, err := normalizeEntry(host)
		if err != nil {
			return "", err
		}
		return joinRule(h, port), nil
	}
	name := strings.TrimSuffix(strings.ToLower(raw), ".")
	domain, wildcard := strings.CutPrefix(name, "*.")
	if err := checkHostName(domain); err != nil {
		return "", fmt.Errorf("%q: %w", raw, err)
	}
	if wildcard {
		return "*." + domain, nil
	}
	return domain, nil
}

// cutPort splits an entry with a port: HOST:PORT, *.DOMAIN:PORT, IPv4:PORT or [IPv6]:PORT (a
// bare IPv6 address, with its colons, is not one: parseIP took it). ok is false when raw has no
// port; err says why a port is not one.
func cutPort(raw string) (host string, port int, ok bool, err error) {
	i := strings.LastIndexByte(raw, ':')
	if i < 0 {
		return "", 0, false, nil
	}
	host, portText := raw[:i], raw[i+1:]
	if strings.HasPrefix(host, "[") {
		inner, closed := strings.CutSuffix(host[1:], "]")
		if !closed {
			return "", 0, false, fmt.Errorf("an IPv6 address with a port is [ADDRESS]:PORT")
		}
		addr, isIP := parseIP(inner)
		if !isIP {
			return "", 0, false, fmt.Errorf("%q in brackets is not an IPv6 address", inner)
		}
		host = addr.String()
	} else if strings.Contains(host, ":") {
		return "", 0, false, fmt.Errorf("an IPv6 address with a port is [ADDRESS]:PORT")
	}
	if host == "" {
		return "", 0, false, fmt.Errorf("no host before the port")
	}
	port, convErr := strconv.Atoi(portText)
	if convErr != nil || port < 1 || port > 65535 || portText != strconv.Itoa(port) {
		return "", 0, false, fmt.Errorf("port %q is not a number from 1 to 65535", portText)
	}
	return host, port, true, nil
}

// joinRule is the canonical spelling of host (canonical already) on port (0: every port).
func joinRule(host string, port int) string {
	if port == 0 {
		return host
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// splitRule is joinRule's inverse on a canonical entry: the host and its port (0: every port).
func splitRule(e string) (string, int) {
	if rest, ok := strings.CutPrefix(e, "["); ok {
		i := strings.Index(rest, "]:")
		port, _ := strconv.Atoi(rest[i+2:])
		return rest[:i], port
	}
	if strings.Count(e, ":") == 1 {
		i := strings.IndexByte(e, ':')
		port, _ := strconv.Atoi(e[i+1:])
		return e[:i], port
	}
	return e, 0
}

// SplitEntry is the host of a canonical entry (Entries) and its port, 0 for every port.
func SplitEntry(e string) (host string, port int) { return splitRule(e) }

// parseIP accepts an IP address, IPv6 with or without brackets; an IPv4-mapped IPv6 address is
// the IPv4 address.
func parseIP(s string) (netip.Addr, bool) {
	if inner, ok := strings.CutPrefix(s, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return netip.Addr{}, false
		}
		s = inner
	}
	addr, err := netip.ParseAddr(s)
	if err != nil || addr.Zone() != "" {
		return netip.Addr{}, false
	}
	return addr.Unmap(), true
}

// checkHostName checks a lower-case host name without trailing dot or wildcard: labels of
// letters, digits, '-' and '_' (found in real host names though not in RFC 952), no label
// starting or ending with '-', and not all-numeric (which would be a mistyped IP address).
func checkHostName(name string) error {
	if name == "" {
		return fmt.Errorf("no host name")
	}
	if len(name) > 253 {
		return fmt.Errorf("a host name is at most 253 characters")
	}
	allDigits := true
	for _, label := range strings.Split(name, ".") {
		if label == "" {
			return fmt.Errorf("an empty label (two dots in a row)")
		}
		if len(label) > 63 {
			return fmt.Errorf("label %q is longer than 63 characters", label)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("label %q starts or ends with '-'", label)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c == '-', c == '_':
				allDigits = false
			case c == '*':
				return fmt.Errorf("'*' is only allowed as a whole first label (*.example.com)")
			default:
				return fmt.Errorf("character %q is not allowed in a host name", c)
			}
		}
	}
	if allDigits {
		return fmt.Errorf("not a valid IP address, and a host name is not all digits")
	}
	return nil
}

// Mode is the policy's mode.
func (p Policy) Mode() Mode { return p.mode }

// Entries are the allowed names of an allow policy, canonical, presets as given ("@go").
func (p Policy) Entries() []string { return append([]string(nil), p.entries...) }

// Hosts are the allowed names of an allow policy with every preset replaced by its hosts.
func (p Policy) Hosts() []string { return append([]string(nil), p.hosts...) }

// Expanded is the policy with every preset replaced by its hosts: what the guest is given, so
// that the runner enforces host names only. Its String is the same policy spelled out.
func (p Policy) Expanded() Policy {
	if p.mode != ModeAllow {
		return p
	}
	e := Policy{mode: ModeAllow, entries: p.Hosts()}
	e.setHosts(p.Hosts())
	return e
}

// HasPresets says whether the policy names a preset.
func (p Policy) HasPresets() bool {
	for _, e := range p.entries {
		if strings.HasPrefix(e, "@") {
			return true
		}
	}
	return false
}

// expand replaces each preset of entries by its hosts, dropping duplicates.
func expand(entries []string) []string {
	var hosts []string
	for _, e := range entries {
		if name, ok := strings.CutPrefix(e, "@"); ok {
			sub, _ := presetHosts(name) // Parse checked the name
			hosts = append(hosts, sub...)
		} else {
			hosts = append(hosts, e)
		}
	}
	return dedup(hosts)
}

// String is the canonical spec: Parse(p.String()) is p.
func (p Policy) String() string {
	switch p.mode {
	case ModeNone:
		return "none"
	case ModeAllow:
		return "allow:" + strings.Join(p.entries, ",")
	}
	return "open"
}

// Restricted says whether the policy needs the agent user, the rules and the proxy.
func (p Policy) Restricted() bool { return p.mode != ModeOpen }

// Allows says whether the agent may reach host (a name or an IP address, as a client puts it
// in a request, possibly with brackets or a trailing dot) on every port under this policy: an
// entry without a port names it. AllowsPort is the proxy's question.
func (p Policy) Allows(host string) bool { return p.AllowsPort(host, 0) }

// AllowsSomePort says whether some entry names host, on any port (for a refusal's reason).
func (p Policy) AllowsSomePort(host string) bool {
	if p.mode != ModeAllow {
		return p.mode == ModeOpen
	}
	for _, e := range p.plain {
		h, port := splitRule(e)
		if port != 0 && (Policy{mode: ModeAllow, plain: []string{h}}).Allows(host) {
			return true
		}
	}
	return p.Allows(host)
}

// AllowsPort says whether the agent may reach host on port under this policy: an entry for
// host without a port (every port), or with this one. Port 0 asks for every port.
func (p Policy) AllowsPort(host string, port int) bool {
	switch p.mode {
	case ModeOpen:
		return true
	case ModeNone:
		return false
	}
	want, ok := canonicalHost(host)
	if !ok {
		return false
	}
	for _, e := range p.plain {
		h, ep := splitRule(e)
		if ep != 0 && ep != port {
			continue
		}
		if domain, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(want, "."+domain) {
				return true
			}
		} else if h == want {
			return true
		}
	}
	return false
}

// canonicalHost is host as entries spell it (lower case, no trailing dot, an IP address in
// netip's form); false when it is neither a host name nor an IP address.
func canonicalHost(host string) (string, bool) {
	if addr, ok := parseIP(host); ok {
		return addr.String(), true
	}
	want := strings.TrimSuffix(strings.ToLower(host), ".")
	return want, checkHostName(want) == nil
}

// AllowsRequest says whether a plain HTTP request (method, and the path as sent: see
// RequestPath) to host on port is allowed: by an entry that allows host:port for everything,
// or by an HTTP rule for it (byRule: the proxy then forwards that one request and nothing
// else the client sends).
func (p Policy) AllowsRequest(host string, port int, method, path string) (allowed, byRule bool) {
	if p.AllowsPort(host, port) {
		return true, false
	}
	want, ok := canonicalHost(host)
	if !ok || p.mode != ModeAllow {
		return false, false
	}
	for _, r := range p.rules {
		if r.matchesHost(want, port) && r.allowsRequest(method, path) {
			return true, true
		}
	}
	return false, false
}

// RulesFor are the HTTP rules (canonical entries) for host on port, for a refusal's reason.
func (p Policy) RulesFor(host string, port int) []string {
	want, ok := canonicalHost(host)
	if !ok {
		return nil
	}
	var out []string
	for _, r := range p.rules {
		if r.matchesHost(want, port) {
			out = append(out, r.String())
		}
	}
	return out
}

// HasRules says whether the policy has HTTP rules (for a path rule, a request's path must be
// checked: RequestPath).
func (p Policy) HasRules() bool { return len(p.rules) > 0 }
