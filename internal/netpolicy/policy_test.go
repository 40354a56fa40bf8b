package netpolicy

import (
	"strings"
	"testing"
)

func TestParseAndString(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"open", "open"},
		{"none", "none"},
		{"allow:proxy.golang.org", "allow:proxy.golang.org"},
		{"allow:Proxy.Golang.ORG.,registry.npmjs.org,*.pypi.org", "allow:proxy.golang.org,registry.npmjs.org,*.pypi.org"},
		{"allow:a.example,A.EXAMPLE,a.example.", "allow:a.example"},
		{"allow:10.0.0.1,[::1],::ffff:1.2.3.4,2001:DB8::1", "allow:10.0.0.1,::1,1.2.3.4,2001:db8::1"},
		{"allow:localhost,my_host.internal", "allow:localhost,my_host.internal"},
		{"allow:A.org:443,*.b.org:8443,10.0.0.1:22,[2001:DB8::1]:443,[::ffff:1.2.3.4]:80,a.org", "allow:a.org:443,*.b.org:8443,10.0.0.1:22,[2001:db8::1]:443,1.2.3.4:80,a.org"},
	} {
		p, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if p.String() != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.spec, p.String(), tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ spec, wantInErr string }{
		{"", "empty network policy"},
		{"allow", "a network policy is open, none, or allow:"},
		{"Allow:x.org", "a network policy is open, none, or allow:"},
		{"allow:", "lists no host"},
		{"allow:a.org,,b.org", "empty name"},
		{"allow:a.org,", "empty name"},
		{"allow:a.org, b.org", "no spaces"},
		{"allow:a.org:0", "not a number from 1 to 65535"},
		{"allow:a.org:65536", "not a number from 1 to 65535"},
		{"allow:a.org:+443", "not a number from 1 to 65535"},
		{"allow:a.org:0443", "not a number from 1 to 65535"},
		{"allow:a.org:https", "not a number from 1 to 65535"},
		{"allow:a.org:", "not a number from 1 to 65535"},
		{"allow::443", "no host before the port"},
		{"allow:@go:443", "a preset stands for hosts on every port"},
		{"allow:[a.org]:443", "is not an IPv6 address"},
		{"allow:[::1:443", "[ADDRESS]:PORT"},
		{"allow:a.org:443:80", "[ADDRESS]:PORT"},
		{"allow:https://a.org", "not a URL"},
		{"allow:a..org", "empty label"},
		{"allow:-a.org", "starts or ends with '-'"},
		{"allow:a*.org", "'*' is only allowed"},
		{"allow:*", "'*' is only allowed"},
		{"allow:*.", "'*' is only allowed"},
		{"allow:*..", "no host name"},
		{"allow:1.2.3", "not a valid IP address"},
		{"allow:*.10.0.0.1", "not a valid IP address"},
		{"allow:a!b.org", "not allowed in a host name"},
		{"allow:" + strings.Repeat("a", 64) + ".org", "longer than 63"},
		{"allow:fe80::1%eth0", "[ADDRESS]:PORT"},
	} {
		_, err := Parse(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.spec, err, tc.wantInErr)
		}
	}
}

func TestAllows(t *testing.T) {
	p, err := Parse("allow:proxy.golang.org,*.pypi.org,10.0.0.1,2001:db8::1")
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"proxy.golang.org":        true,
		"PROXY.golang.org.":       true,
		"sum.golang.org":          false,
		"evilproxy.golang.org":    false,
		"proxy.golang.org.evil":   false,
		"files.pypi.org":          true,
		"a.b.pypi.org":            true,
		"pypi.org":                false, // the wildcard matches subdomains only
		"xpypi.org":               false,
		"10.0.0.1":                true,
		"10.0.0.2":                false,
		"[2001:db8::1]":           true,
		"2001:0db8:0:0:0:0:0:1":   true,
		"::ffff:10.0.0.1":         true,
		"":                        false,
		"*.pypi.org":              false,
		"files.pypi.org:443":      false,
		"files.pypi.org\x00.evil": false,
	} {
		if got := p.Allows(host); got != want {
			t.Errorf("Allows(%q) = %v, want %v", host, got, want)
		}
	}
	none, _ := Parse("none")
	open, _ := Parse("open")
	if none.Allows("localhost") || !open.Allows("anything") {
		t.Errorf("none allows, or open refuses")
	}
}

func TestAllowsPort(t *testing.T) {
	p, err := Parse("allow:a.org:443,*.b.org:8443,10.0.0.1:22,[2001:db8::1]:443,c.org")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"a.org", 443, true},
		{"A.ORG.", 443, true},
		{"a.org", 80, false},
		{"a.org", 0, false}, // every port: no
		{"x.b.org", 8443, true},
		{"x.b.org", 443, false},
		{"b.org", 8443, false},
		{"10.0.0.1", 22, true},
		{"10.0.0.1", 23, false},
		{"[2001:db8::1]", 443, true},
		{"2001:db8::1", 80, false},
		{"c.org", 1, true},
		{"c.org", 65535, true},
		{"c.org", 0, true},
		{"d.org", 443, false},
	} {
		if got := p.AllowsPort(tc.host, tc.port); got != tc.want {
			t.Errorf("AllowsPort(%q, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	if p.Allows("a.org") || !p.Allows("c.org") {
		t.Errorf("Allows (every port): a.org %v, c.org %v", p.Allows("a.org"), p.Allows("c.org"))
	}
	// A preset with a host:port entry: the expansion keeps the port.
	q, err := Parse("allow:@go,example.com:8080")
	if err != nil {
		t.Fatal(err)
	}
	if e := q.Expanded().String(); !strings.HasSuffix(e, ",example.com:8080") {
		t.Errorf("expanded %q", e)
	}
	if !q.Expanded().AllowsPort("example.com", 8080) || q.Expanded().AllowsPort("example.com", 80) {
		t.Errorf("the expansion lost the port")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"open", "none", "allow:a.org,*.b.org,1.2.3.4,[::1]", "allow:a.org:443,[::1]:80,*.c.org:1", "allow:A.ORG.", "allow:,", "allow:*.*"} {
		f.Add(s, "files.b.org")
	}
	f.Fuzz(func(t *testing.T, spec, host string) {
		p, err := Parse(spec)
		if err != nil {
			return
		}
		again, err := Parse(p.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", spec, p.String(), err)
		}
		if again.String() != p.String() {
			t.Fatalf("round trip of %q: %q then %q", spec, p.String(), again.String())
		}
		_ = p.Allows(host)
		for _, e := range p.Entries() {
			h, port := splitRule(e)
			if strings.HasPrefix(e, "@") || strings.HasPrefix(h, "*.") {
				continue
			}
			if !p.AllowsPort(h, max(port, 1)) {
				t.Fatalf("policy %q does not allow its own entry %q", p, e)
			}
			if port != 0 && p.Allows(h) && !strings.Contains(p.String(), ","+h+",") {
				// only an entry for every port may allow every port
				for _, other := range p.Entries() {
					if other == h {
						goto next
					}
				}
				t.Fatalf("policy %q allows %s on every port from the entry %q", p, h, e)
			}
		next:
		}
	})
}
