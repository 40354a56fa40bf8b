package netpolicy

import (
	"regexp"
	"strings"
	"testing"
)

func TestHTTPRulesParse(t *testing.T) {
	for in, want := range map[string]string{
		"allow:Example.com:ro":                    "allow:example.com:ro",
		"allow:example.com:HEAD+GET":              "allow:example.com:ro",
		"allow:example.com:8080/simple/*:GET":     "allow:example.com:8080/simple/*:GET",
		"allow:example.com/*":                     "allow:example.com/*",
		"allow:*.example.com/api:POST+GET":        "allow:*.example.com/api:GET+POST",
		"allow:[::1]:8080:ro":                     "allow:[::1]:8080:ro",
		"allow:10.0.0.5:ro,example.com":           "allow:10.0.0.5:ro,example.com",
		"allow:github.com/*/git-upload-pack:POST": "allow:github.com/*/git-upload-pack:POST",
	} {
		p, err := Parse(in)
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if p.String() != want {
			t.Errorf("Parse(%q) = %q, want %q", in, p.String(), want)
		}
		again, err := Parse(p.String())
		if err != nil || again.String() != p.String() {
			t.Errorf("%q does not round-trip: %q, %v", p.String(), again.String(), err)
		}
	}
	for in, wantErr := range map[string]string{
		"allow:example.com/a/../b":    "no '.' or '..' segment",
		"allow:example.com/a**b":      "'**'",
		"allow:example.com/*a*b*c*d*": "at most 4 '*'",
		"allow:example.com/a%2fb":     "not allowed in a rule's path",
		"allow:example.com:CONNECT":   "CONNECT is a tunnel",
		"allow:@go:ro":                "a preset stands for hosts on every port",
		"allow:@go/x":                 "is not a preset",
		"allow:example.com:GET++PUT":  "an empty method",
		"allow:example.com:https":     "not a number from 1 to 65535",
		"allow:http://example.com/x":  "not a URL",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", in, err, wantErr)
		}
	}
}

func TestHTTPRulesAllow(t *testing.T) {
	p, err := Parse("allow:ro.example:ro,api.example:8080/v1/*:GET+POST,exact.example/index.html,full.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host          string
		port          int
		method, path  string
		allowed, rule bool
	}{
		{"ro.example", 80, "GET", "/anything", true, true},
		{"RO.example.", 80, "HEAD", "/", true, true},
		{"ro.example", 80, "POST", "/anything", false, false},
		{"ro.example", 80, "PUT", "/", false, false},
		{"api.example", 8080, "POST", "/v1/items", true, true},
		{"api.example", 8080, "DELETE", "/v1/items", false, false},
		{"api.example", 8080, "GET", "/v2/items", false, false},
		{"api.example", 80, "GET", "/v1/items", false, false},
		{"exact.example", 80, "PUT", "/index.html", true, true},
		{"exact.example", 80, "GET", "/index.html.bak", false, false},
		{"full.example", 80, "DELETE", "/x", true, false},
		{"other.example", 80, "GET", "/", false, false},
	} {
		allowed, rule := p.AllowsRequest(c.host, c.port, c.method, c.path)
		if allowed != c.allowed || rule != c.rule {
			t.Errorf("AllowsRequest(%s:%d %s %s) = %v, %v; want %v, %v", c.host, c.port, c.method, c.path, allowed, rule, c.allowed, c.rule)
		}
	}
	// A rule allows requests only: a tunnel to its host is not allowed.
	if p.AllowsPort("ro.example", 443) || p.Allows("api.example") {
		t.Error("a host named by HTTP rules only is allowed for tunnels")
	}
	if got := p.RulesFor("ro.example", 443); len(got) != 1 || got[0] != "ro.example:ro" {
		t.Errorf("RulesFor = %q", got)
	}
	// The guest's spelled-out policy keeps the rules.
	if e := p.Expanded(); e.String() != p.String() {
		t.Errorf("Expanded = %q", e.String())
	}
}

func TestRulePathGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"/*/git-upload-pack", "/owner/repo.git/git-upload-pack", true},
		{"/*/git-upload-pack", "/git-upload-pack", false},
		{"/*/git-upload-pack", "//git-upload-pack", true},
		{"/*/git-upload-pack", "/owner/repo.git/git-receive-pack", false},
		{"/*/git-upload-pack", "/owner/repo.git/git-upload-pack/x", false},
		{"/a/*/b/*", "/a/x/y/b/z", true},
		{"/a/*/b/*", "/a/b/z", false},
		{"/a*a", "/a", false},
		{"/a*a", "/aa", true},
		{"/x*y*z", "/xzyz", true},
		{"/x*y*z", "/xzy", false},
		{"/simple/*", "/simple/", true},
		{"/simple/*", "/simplex", false},
		{"/index.html", "/index.html", true},
		{"/index.html", "/index.htm", false},
	} {
		if got := matchPathGlob(c.pattern, c.path); got != c.want {
			t.Errorf("matchPathGlob(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

// FuzzRulePathGlob checks the glob against a regular expression built from the same pattern.
func FuzzRulePathGlob(f *testing.F) {
	f.Add("/*/git-upload-pack", "/o/r.git/git-upload-pack")
	f.Add("/a*b*c", "/abcbc")
	f.Add("/x*x*x", "/xxxx")
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if checkRulePath(pattern) != nil || !strings.HasPrefix(pattern, "/") || len(path) > 200 {
			return
		}
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re := regexp.MustCompile("^" + strings.Join(parts, "(?s:.*)") + "$")
		if got, want := matchPathGlob(pattern, path), re.MatchString(path); got != want {
			t.Fatalf("matchPathGlob(%q, %q) = %v, the regexp says %v", pattern, path, got, want)
		}
	})
}

func TestRequestPath(t *testing.T) {
	for _, ok := range []string{"", "/", "/a/b.txt", "/a%20b"} {
		if err := RequestPath(ok); err != nil {
			t.Errorf("RequestPath(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"/a/../b", "/a/%2e%2e/b", "/a%2Fb", "/a\\b", "/./x", "x"} {
		if err := RequestPath(bad); err == nil {
			t.Errorf("RequestPath(%q) accepted", bad)
		}
	}
}

func TestRuleTargets(t *testing.T) {
	for in, want := range map[string]string{
		"allow:github.com:ro,github.com/*/git-upload-pack:POST": "github.com:443",
		"allow:github.com:ro,github.com":                        "",                 // a plain entry: a tunnel
		"allow:github.com:ro,github.com:443":                    "",                 // the same, on 443
		"allow:github.com:ro,github.com:22":                     "github.com:443",   // another port only
		"allow:api.example:8443/v1/*:GET,*.example:ro":          "api.example:8443", // not a wildcard
		"allow:10.0.0.5:ro,[::1]:ro":                            "",                 // not an IP address
		"allow:b.example:ro,a.example:GET,a.example:HEAD":       "a.example:443,b.example:443",
		"open": "",
		"none": "",
	} {
		p, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if got := strings.Join(p.RuleTargets(), ","); got != want {
			t.Errorf("%s: RuleTargets = %q, want %q", in, got, want)
		}
	}
	if err := (&SecretsSetup{RuleTargets: []string{"github.com"}}).Check(); err == nil {
		t.Error("a rule target without a port was accepted")
	}
	if err := (&SecretsSetup{}).Check(); err == nil || !strings.Contains(err.Error(), "bound hosts and rule targets") {
		t.Errorf("an empty setup: %v", err)
	}
	if _, err := RulesPolicy([]string{"github.com:ro", "github.com"}); err == nil {
		t.Error("RulesPolicy took a plain entry")
	}
}

// ExactRule: the rule `watch` adds for a request the relay refused allows that request and no
// other. The method and path are the agent's; those that would widen it are refused.
func TestExactRule(t *testing.T) {
	for _, c := range []struct {
		host         string
		port         int
		method, path string
		want         string
	}{
		{"github.com", 443, "POST", "/o/r.git/git-receive-pack", "github.com:443/o/r.git/git-receive-pack:POST"},
		{"GitHub.com", 8443, "PUT", "/x", "github.com:8443/x:PUT"},
		{"registry.npmjs.org", 443, "PUT", "/e2e-project", "registry.npmjs.org:443/e2e-project:PUT"},
	} {
		if got, err := ExactRule(c.host, c.port, c.method, c.path); err != nil || got != c.want {
			t.Errorf("ExactRule(%q, %d, %q, %q) = %q, %v; want %q", c.host, c.port, c.method, c.path, got, err, c.want)
		}
	}
	for _, bad := range [][2]string{
		{"PUT+POST", "/x"}, {"ro", "/x"}, {"", "/x"}, {"CONNECT", "/x"}, {"POST", "/*"}, {"POST", "/o/*/x"},
		{"POST", "/a,b.test"}, {"POST", "/a:GET"}, {"POST", "/a/../b"}, {"POST", "x"}, {"POST", "/a b"}, {"POST", "/a%2Fb"},
	} {
		if got, err := ExactRule("github.com", 443, bad[0], bad[1]); err == nil {
			t.Errorf("ExactRule(%q, %q) = %q, want a refusal", bad[0], bad[1], got)
		}
	}
	for _, host := range []string{"@go", "a.test,b.test", "*.github.com", "a/b", ""} {
		if got, err := ExactRule(host, 443, "POST", "/x"); err == nil {
			t.Errorf("ExactRule(host %q) = %q, want a refusal", host, got)
		}
	}
}

// FuzzExactRule: whatever method and path an agent sends, a rule ExactRule makes, as the
// policy reads it, is one entry that allows that request on that host and port, and not
// another method, another path, another host or another port.
func FuzzExactRule(f *testing.F) {
	f.Add("POST", "/o/r.git/git-receive-pack", 443)
	f.Add("PUT", "/a,b.test", 443)
	f.Add("GET+PUT", "/x", 8443)
	f.Add("POST", "/a:GET", 80)
	f.Fuzz(func(t *testing.T, method, path string, port int) {
		rule, err := ExactRule("github.com", port, method, path)
		if err != nil {
			return
		}
		p, err := Parse("allow:" + rule)
		if err != nil {
			t.Fatalf("ExactRule made %q, which does not parse: %v", rule, err)
		}
		if len(p.Entries()) != 1 {
			t.Fatalf("ExactRule(%q, %q) made %q: %d entries", method, path, rule, len(p.Entries()))
		}
		if ok, byRule := p.AllowsRequest("github.com", port, method, path); !ok || !byRule {
			t.Fatalf("%q does not allow %s %s", rule, method, path)
		}
		other := "GET"
		if method == "GET" {
			other = "POST"
		}
		for _, c := range []struct {
			host         string
			port         int
			method, path string
		}{
			{"github.com", port, other, path},
			{"github.com", port, method, path + "x"},
			{"github.com", port, method, path + "/x"},
			{"github.com", port, method, "/other" + path},
			{"example.com", port, method, path},
			{"github.com", port%65535 + 1, method, path},
		} {
			if ok, _ := p.AllowsRequest(c.host, c.port, c.method, c.path); ok {
				t.Fatalf("%q (from %s %s) allows %s %s on %s:%d too", rule, method, path, c.method, c.path, c.host, c.port)
			}
		}
	})
}
